import type { LeadershipEvents } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { describe, expect, it } from 'vitest';
import { nextEvent, observeFor, waitFor } from '../wait-for.js';
import { codeOf, logMembers, type Harness } from './harness.js';

/** close(): everything released promptly, then nothing more accepted. */
export function lifecycleCases(h: Harness): void {
  const { timings } = h;
  const bound = timings.watchBoundMs;

  describe('close()', () => {
    it('withdraws, resigns and releases everything, and the others see it at once through the watch', async () => {
      const slow = timings.slowLease;
      const closing = await h.registry('closing', h.slow());
      const peer = await h.registry('peer', h.slow());
      const waiter = await h.registry('waiter', h.slow());
      const members = logMembers(peer, 'worker');
      await closing.announce({ role: 'worker', id: 'w1', payload: { last: true } });
      const leadership = closing.campaign('scheduler');
      await leadership.whenElected();
      const lock = await closing.lock('l');
      await members.next((e) => e.type === 'added', bound);
      const follower = peer.campaign('scheduler');
      let lockedAt: number | undefined;
      const waiting = waiter.lock('l').then((handle) => ((lockedAt = performance.now()), handle));
      const electedPeer = nextEvent<LeadershipEvents, 'elected'>(follower, 'elected', slow.leaseDurationMs);
      const lostLeadership = nextEvent<LeadershipEvents, 'lost'>(leadership, 'lost', bound);
      const started = performance.now();
      // The others have made their first attempts and wait; their next poll is a retryPeriod away.
      await observeFor(5 * timings.toleranceMs);
      expect(follower.isLeader).toBe(false);
      expect(lockedAt).toBeUndefined();
      const closedAt = performance.now();
      await closing.close();
      expect((await lostLeadership).reason).toBe('closed');
      expect(lock.signal.aborted).toBe(true);
      expect((lock.signal.reason as { reason?: string }).reason).toBe('closed');
      const removed = await members.next((e) => e.type === 'removed', bound);
      expect(removed).toMatchObject({ reason: 'deleted', member: { id: 'w1', payload: { last: true } } });
      await electedPeer;
      const electedAt = performance.now();
      const next = await waiting;
      expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
      for (const at of [members.times[1]!, electedAt, lockedAt!]) {
        expect(at - closedAt).toBeLessThan(bound);
        expect(at - started).toBeLessThan(slow.retryPeriodMs);
      }
    });

    it('a registry opened later sees what already exists: members with their payloads, the leader, held locks', async () => {
      const a = await h.registry('a');
      await a.announce({ role: 'worker', id: 'w1', payload: { cpu: 1 } });
      const leadership = a.campaign('scheduler');
      const token = await leadership.whenElected();
      const lock = await a.lock('l');
      const late = await h.registry('late');
      expect((await late.members('worker')).map((m) => [m.id, m.payload])).toEqual([['w1', { cpu: 1 }]]);
      expect(await late.observe('scheduler').ready()).toMatchObject({ identity: 'a', fencingToken: token });
      expect(await late.tryLock('l')).toBeUndefined();
      const follower = late.campaign('scheduler');
      await observeFor(5 * timings.toleranceMs);
      expect(follower.isLeader).toBe(false);
      expect(lock.held).toBe(true);
    });

    it('every state change is also an event on the registry: member, leadership and lock events', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const seen: string[] = [];
      a.on('elected', (ev) => seen.push(`elected ${ev.election} ${ev.fencingToken}`));
      a.on('leadershipLost', (ev) => seen.push(`leadershipLost ${ev.election} ${ev.reason}`));
      a.on('lockAcquired', (ev) => seen.push(`lockAcquired ${ev.name} ${ev.fencingToken}`));
      a.on('lockLost', (ev) => seen.push(`lockLost ${ev.name} ${ev.reason}`));
      a.on('memberAdded', (ev) => seen.push(`memberAdded ${ev.member.id}`));
      a.on('memberUpdated', (ev) => seen.push(`memberUpdated ${ev.member.id}`));
      a.on('memberRemoved', (ev) => seen.push(`memberRemoved ${ev.member.id} ${ev.reason}`));
      await a.members('worker'); // the member events of the roles it reads
      const member = await b.announce({ role: 'worker', id: 'w1', payload: 1 });
      await waitFor(() => seen.includes('memberAdded w1'), bound, 'memberAdded');
      await member.update(2);
      await waitFor(() => seen.includes('memberUpdated w1'), bound, 'memberUpdated');
      await member.withdraw();
      await waitFor(() => seen.includes('memberRemoved w1 deleted'), bound, 'memberRemoved');
      const leadership = a.campaign('scheduler');
      const token = await leadership.whenElected();
      await leadership.resign();
      const lock = await a.lock('l');
      await lock.release();
      expect(seen).toEqual([
        'memberAdded w1',
        'memberUpdated w1',
        'memberRemoved w1 deleted',
        `elected scheduler ${token}`,
        'leadershipLost scheduler released',
        `lockAcquired l ${lock.fencingToken}`,
        'lockLost l released',
      ]);
    });

    it('after close(), every call fails CLOSED, a waiting lock() is rejected CLOSED, and close() again is a no-op', async () => {
      const holder = await h.registry('holder');
      const r = await h.registry('r');
      await holder.lock('l');
      const waiting = codeOf(r.lock('l'));
      await r.close();
      expect(await waiting).toBe('CLOSED');
      await r.close();
      expect(await codeOf(r.announce({ role: 'worker' }))).toBe('CLOSED');
      expect(await codeOf(r.members('worker'))).toBe('CLOSED');
      expect(await codeOf(() => r.watchMembers('worker', () => {}))).toBe('CLOSED');
      expect(await codeOf(() => r.campaign('scheduler'))).toBe('CLOSED');
      expect(await codeOf(() => r.observe('scheduler'))).toBe('CLOSED');
      expect(await codeOf(() => r.lock('l'))).toBe('CLOSED');
      expect(await codeOf(r.tryLock('l'))).toBe('CLOSED');
      await waitFor(async () => (await registryStore(holder).list('member/')).records.length === 0, bound, 'no member records');
    });
  });
}
