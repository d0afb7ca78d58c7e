import { registryStore } from '@rollcall/core/admin';
import { describe, expect, it } from 'vitest';
import { skipReason } from '../capabilities.js';
import { observeFor, waitFor } from '../wait-for.js';
import { logMembers, type Harness } from './harness.js';

/** A crashed client: a real child process killed with SIGKILL, which cleans nothing up. */
export function crashCases(h: Harness): void {
  const { timings } = h;
  const bound = timings.watchBoundMs;
  const tolerance = timings.toleranceMs;
  const m = timings.member;
  const e = timings.election;
  const l = timings.lock;

  describe('a crashed client (SIGKILL)', () => {
    if (!h.capabilities.crashChild) {
      for (const title of [
        "a crashed client's member expires for its peers",
        'a crashed leader is replaced only after its lease',
        "a crashed lock holder's lock is taken only after its lease",
        'a restarted incarnation replaces its crashed member record at once',
        'a candidate whose wall clock runs an hour ahead neither takes a live lease nor outlives its own',
      ]) {
        it.skip(skipReason(h.backend, 'crashChild', title), () => {});
      }
      return;
    }

    it("a crashed client's member expires for its peers after its lease, removed with its last data; every peer says expired", async () => {
      const peer = await h.registry('peer');
      const log = logMembers(peer, 'worker');
      // A second reader: one of the two deletes the record, and the other learns the reason from its mark, not from the delete.
      const other = await h.registry('other');
      const otherLog = logMembers(other, 'worker');
      const child = await h.crashChild('child');
      await child.command({ op: 'announce', role: 'worker', id: 'w1', payload: { n: 1 } }, bound);
      // seen before the update: a watch that first reads the member after the update reports it added with { n: 2 }, and no update
      await log.next((ev) => ev.type === 'added', bound);
      await child.command({ op: 'update', role: 'worker', id: 'w1', payload: { n: 2 } }, bound);
      await log.next((ev) => ev.type === 'updated', bound);
      const lapse = await h.lapse(child, await child.kill());
      const removed = await log.next((ev) => ev.type === 'removed', lapse.maxMs);
      expect(removed).toMatchObject({ reason: 'expired', member: { role: 'worker', id: 'w1', payload: { n: 2 } } });
      // Not before the lease (its last heartbeat was at most one interval before the kill), or before its pod was not Ready.
      expect(log.times[2]! - lapse.at).toBeGreaterThanOrEqual(lapse.minMs);
      expect(log.summary()).toEqual(['added w1', 'updated w1', 'removed w1']);
      const otherRemoved = await otherLog.next((ev) => ev.type === 'removed', bound);
      expect(otherRemoved).toMatchObject({ reason: 'expired', member: { role: 'worker', id: 'w1', payload: { n: 2 } } });
      // The expired record does not linger: a peer deletes it (marked, then deleted, by compare-and-set), or it goes with its pod.
      const retireMs = await h.retire(child);
      await waitFor(async () => (await registryStore(peer).list('member/')).records.length === 0, retireMs, 'the expired record to be deleted');
      expect(await peer.members('worker')).toEqual([]);
      expect(log.summary()).toEqual(['added w1', 'updated w1', 'removed w1']);
    });

    it('a crashed leader is replaced only after its lease, with a larger fencing token; observers see it go', async () => {
      const child = await h.crashChild('child');
      await child.command({ op: 'campaign', election: 'scheduler' }, bound);
      const { event: elected } = await child.event('elected', bound);
      const o = await h.registry('observer');
      const observer = o.observe('scheduler');
      await waitFor(() => observer.leader?.identity === 'child', bound, 'the observer to see the child lead');
      const observed: (string | undefined)[] = [];
      observer.on('changed', ({ leader }) => observed.push(leader?.identity));
      const b = await h.registry('b');
      const c = await h.registry('c');
      const candidates = [b.campaign('scheduler'), c.campaign('scheduler')];
      const electedAt: number[] = [];
      for (const candidate of candidates) candidate.on('elected', () => electedAt.push(performance.now()));
      const killedAt = await child.kill();
      await waitFor(() => electedAt.length > 0, e.leaseDurationMs + bound, 'a new leader');
      expect(electedAt[0]! - killedAt).toBeGreaterThanOrEqual(e.leaseDurationMs - e.retryPeriodMs - tolerance);
      const leaders = candidates.filter((x) => x.isLeader);
      expect(leaders).toHaveLength(1);
      expect(leaders[0]!.fencingToken!).toBeGreaterThan(elected.fencingToken);
      await waitFor(() => observer.leader?.identity === leaders[0]!.identity, bound, 'the observer to see the new leader');
      // The dead leader is gone for the observer too: straight to the successor, or through "no leader".
      expect(observed.filter((x) => x !== undefined)).toEqual([leaders[0]!.identity]);
    });

    it('a restarted incarnation replaces its crashed member record at once: removed, then added as a new record, never an updated across the two', async () => {
      const peer = await h.registry('peer');
      const log = logMembers(peer, 'worker');
      const child = await h.crashChild('child');
      await child.command({ op: 'announce', role: 'worker', id: 'w1', payload: { generation: 1 } }, bound);
      await log.next((ev) => ev.type === 'added', bound);
      await child.kill();
      // The process comes back (here: a new registry) under the same role and id before the lease ran out.
      const restarted = await h.registry('restarted');
      const handle = await restarted.announce({ role: 'worker', id: 'w1', payload: { generation: 2 } });
      await log.next((ev) => ev.type === 'added', bound, 2);
      await observeFor(m.leaseDurationMs * 1.5);
      expect(log.summary()).toEqual(['added w1', 'removed w1', 'added w1']);
      expect(log.events[1]!.member.payload).toEqual({ generation: 1 });
      expect(handle.alive).toBe(true);
      expect((await peer.members('worker')).map((x) => x.payload)).toEqual([{ generation: 2 }]);
    });

    it('a candidate whose wall clock runs an hour ahead neither takes a live lease nor outlives its own', async () => {
      const HOUR = 3_600_000;
      const a = await h.registry('a');
      const la = a.campaign('scheduler');
      const tokenA = await la.whenElected();
      const child = await h.crashChild('skewed', {}, HOUR);
      await child.command({ op: 'campaign', election: 'scheduler' }, bound);
      // Its timestamps say a's lease is an hour old; expiry by its own monotonic clock says a is alive.
      await observeFor(e.leaseDurationMs * 1.5);
      expect(child.events).toEqual([]);
      expect(la.isLeader).toBe(true);
      expect(la.fencingToken).toBe(tokenA);
      await la.resign();
      const { event: elected } = await child.event('elected', bound);
      expect(elected.fencingToken).toBeGreaterThan(tokenA);
      // Its renewTime is an hour in the future; the observers' clocks still expire it after one lease.
      const b = await h.registry('b');
      const lb = b.campaign('scheduler');
      const killedAt = await child.kill();
      await lb.whenElected();
      const electedAt = performance.now();
      expect(electedAt - killedAt).toBeGreaterThanOrEqual(e.leaseDurationMs - e.retryPeriodMs - tolerance);
      expect(electedAt - killedAt).toBeLessThan(e.leaseDurationMs + bound);
      expect(lb.fencingToken!).toBeGreaterThan(elected.fencingToken);
    });

    it("a crashed lock holder's lock is taken only after its lease, with a larger fencing token", async () => {
      const child = await h.crashChild('child');
      const childToken = (await child.command({ op: 'lock', name: 'l' }, bound)) as number;
      const b = await h.registry('b');
      let acquiredAt: number | undefined;
      const waiting = b.lock('l').then((handle) => ((acquiredAt = performance.now()), handle));
      const killedAt = await child.kill();
      const handle = await waiting;
      expect(acquiredAt! - killedAt).toBeGreaterThanOrEqual(l.leaseDurationMs - l.retryPeriodMs - tolerance);
      expect(acquiredAt! - killedAt).toBeLessThan(l.leaseDurationMs + bound);
      expect(handle.fencingToken).toBeGreaterThan(childToken);
    });
  });
}
