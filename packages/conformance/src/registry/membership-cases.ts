import { observeBackend } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { describe, expect, it } from 'vitest';
import { observeFor, waitFor } from '../wait-for.js';
import { codeOf, logMembers, type Harness } from './harness.js';

/** Membership: announce, update, withdraw and the views peers derive from them. */
export function membershipCases(h: Harness): void {
  const { timings } = h;
  const bound = timings.watchBoundMs;

  describe('membership', () => {
    it('an announced member reaches its peers as added, with its payload', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const log = logMembers(b, 'worker');
      await a.announce({ role: 'worker', id: 'w1', payload: { cpu: 0.25, status: 'NORMAL' } });
      const added = await log.next((e) => e.type === 'added' && e.member.id === 'w1', bound);
      expect(added.member).toMatchObject({ role: 'worker', id: 'w1', payload: { cpu: 0.25, status: 'NORMAL' } });
      expect(added.member.acquireTime).toBeInstanceOf(Date);
      expect(added.member.renewTime).toBeInstanceOf(Date);
      expect((await b.members('worker')).map((m) => [m.id, m.payload])).toEqual([['w1', { cpu: 0.25, status: 'NORMAL' }]]);
      expect(log.summary()).toEqual(['added w1']);
    });

    it('update() reaches peers at once as updated, with the new and the previous payload', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const log = logMembers(b, 'worker');
      const member = await a.announce({ role: 'worker', id: 'w1', payload: { status: 'NORMAL' } });
      await log.next((e) => e.type === 'added', bound);
      const sent = performance.now();
      await member.update({ status: 'BUSY' });
      const updated = await log.next((e) => e.type === 'updated', bound);
      // Sooner than the next heartbeat could have carried it: update writes at once.
      expect(log.times[1]! - sent).toBeLessThan(timings.member.heartbeatIntervalMs);
      expect(updated).toMatchObject({ type: 'updated', member: { id: 'w1', payload: { status: 'BUSY' } }, previous: { id: 'w1', payload: { status: 'NORMAL' } } });
      expect(member.payload).toEqual({ status: 'BUSY' });
      expect((await b.members('worker'))[0]?.payload).toEqual({ status: 'BUSY' });
    });

    it('withdraw() reaches peers through the watch as removed, carrying the last payload', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const log = logMembers(b, 'worker');
      const member = await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
      // A backend that reads the current state on notification (ZooKeeper) may fold a quick update into the add.
      await log.next((e) => e.type === 'added', bound);
      await member.update({ n: 2 });
      await log.next((e) => e.type === 'updated', bound);
      const sent = performance.now();
      await member.withdraw();
      const removed = await log.next((e) => e.type === 'removed', bound);
      expect(removed).toMatchObject({ type: 'removed', reason: 'deleted', member: { id: 'w1', payload: { n: 2 } } });
      // Well before the lease could have expired it.
      expect(log.times[2]! - sent).toBeLessThan(timings.member.leaseDurationMs / 2);
      expect(await b.members('worker')).toEqual([]);
      expect(log.summary()).toEqual(['added w1', 'updated w1', 'removed w1']);
    });

    it('members(role) lists only that role, sorted by id; watchMembers(role) sees only that role', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const workers = logMembers(b, 'worker');
      const masters = logMembers(b, 'master');
      await a.announce({ role: 'worker', id: 'w2' });
      await a.announce({ role: 'worker', id: 'w1' });
      await a.announce({ role: 'master', id: 'm1' });
      await a.announce({ role: 'workers', id: 'x1' }); // a role sharing the prefix
      await workers.next((e) => e.member.id === 'w1', bound);
      await masters.next((e) => e.member.id === 'm1', bound);
      await h.registry('probe').then((c) => logMembers(c, 'workers').next((e) => e.member.id === 'x1', bound));
      expect((await b.members('worker')).map((m) => m.id)).toEqual(['w1', 'w2']);
      expect((await b.members('master')).map((m) => m.id)).toEqual(['m1']);
      expect(await b.members('nobody')).toEqual([]);
      expect(workers.summary().sort()).toEqual(['added w1', 'added w2']);
      expect(masters.summary()).toEqual(['added m1']);
    });

    it('watchMembers() first replays every current member as added, then reports changes', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      await a.announce({ role: 'worker', id: 'w1', payload: 1 });
      await a.announce({ role: 'worker', id: 'w2', payload: 2 });
      // A role not read yet is replayed once listed, in the backend's order.
      const first = logMembers(b, 'worker');
      await first.next((e) => e.member.id === 'w1', bound);
      await first.next((e) => e.member.id === 'w2', bound);
      expect(first.summary().sort()).toEqual(['added w1', 'added w2']);
      // A role read already is replayed at once, sorted by id.
      const log = logMembers(b, 'worker');
      expect(log.summary()).toEqual(['added w1', 'added w2']);
      expect(log.events.map((e) => e.member.payload)).toEqual([1, 2]);
      await a.announce({ role: 'worker', id: 'w3' });
      await log.next((e) => e.member.id === 'w3', bound);
      expect(log.summary()).toEqual(['added w1', 'added w2', 'added w3']);
    });

    it('a registry watches only what it reads: one that only announces lists and watches nothing; writes of a role reach no registry that does not read it', async () => {
      const announcer = await h.registry('announcer');
      const reader = await h.registry('reader');
      const witness = await h.registry('witness');
      const announcerCalls: string[] = [];
      observeBackend(announcer, (a) => a.type === 'request' && announcerCalls.push(a.operation));
      const readerPuts: string[] = [];
      observeBackend(reader, (a) => a.type === 'watchEvent' && a.event !== 'progress' && readerPuts.push(a.event));
      await reader.members('quiet'); // reads a role nobody writes
      const seen = logMembers(witness, 'busy');
      const busy = await announcer.announce({ role: 'busy', id: 'b1', payload: 0 });
      for (let i = 1; i <= 5; i++) await busy.update(i);
      await seen.next((e) => e.member.payload === 5, bound);
      // The witness has seen every write; anything meant for the reader would have arrived within the bound too.
      await observeFor(timings.toleranceMs);
      expect(readerPuts).toEqual([]);
      expect([...new Set(announcerCalls)].sort()).toEqual(expect.not.arrayContaining(['list', 'watch']));
      expect(announcerCalls).toContain('create');
    });

    it('a member that keeps heartbeating outlives its lease, and unchanged heartbeats are not events', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const log = logMembers(b, 'worker');
      await a.announce({ role: 'worker', id: 'w1', payload: { same: true } });
      await log.next((e) => e.type === 'added', bound);
      const firstRenew = (await b.members('worker'))[0]!.renewTime!.getTime();
      await observeFor(timings.member.leaseDurationMs * 1.5);
      expect(log.summary()).toEqual(['added w1']);
      const [seen] = await b.members('worker');
      expect(seen?.id).toBe('w1');
      if (h.liveness === 'reaper' || h.pods) {
        // Heartbeats renew another record, which readers never receive, or none at all (its pod's readiness is its
        // liveness): the member record is as announced.
        expect(seen!.renewTime!.getTime()).toBe(firstRenew);
        return;
      }
      expect(seen!.renewTime!.getTime()).toBeGreaterThan(firstRenew);
    });

    it('withdraw() is idempotent, and a withdrawn member refuses update() with CLOSED', async () => {
      const a = await h.registry('a');
      const member = await a.announce({ role: 'worker', id: 'w1' });
      await member.withdraw();
      await member.withdraw();
      expect(await codeOf(member.update({ n: 1 }))).toBe('CLOSED');
      expect((await registryStore(a).list('')).records).toEqual([]);
      await waitFor(async () => (await a.members('worker')).length === 0, bound, 'the withdrawn member to leave the view');
    });
  });
}
