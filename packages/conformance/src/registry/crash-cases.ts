import { describe, expect, it } from 'vitest';
import { skipReason } from '../capabilities.js';
import { waitFor } from '../wait-for.js';
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
      for (const title of ["a crashed client's member expires for its peers", 'a crashed leader is replaced only after its lease', "a crashed lock holder's lock is taken only after its lease"]) {
        it.skip(skipReason(h.backend, 'crashChild', title), () => {});
      }
      return;
    }

    it("a crashed client's member expires for its peers after its lease, removed with its last data", async () => {
      const peer = await h.registry('peer');
      const log = logMembers(peer, 'worker');
      const child = await h.crashChild('child');
      await child.command({ op: 'announce', role: 'worker', id: 'w1', payload: { n: 1 } }, bound);
      await child.command({ op: 'update', role: 'worker', id: 'w1', payload: { n: 2 } }, bound);
      await log.next((ev) => ev.type === 'updated', bound);
      const killedAt = await child.kill();
      const removed = await log.next((ev) => ev.type === 'removed', m.leaseDurationMs + bound);
      expect(removed).toMatchObject({ reason: 'expired', member: { role: 'worker', id: 'w1', payload: { n: 2 } } });
      // Not before the lease: its last heartbeat was at most one interval before the kill.
      expect(log.times[2]! - killedAt).toBeGreaterThanOrEqual(m.leaseDurationMs - m.heartbeatIntervalMs - tolerance);
      expect(log.summary()).toEqual(['added w1', 'updated w1', 'removed w1']);
      // The peer deletes the expired record (by compare-and-set), so it does not linger.
      await waitFor(async () => (await peer.recordStore.list('member/')).records.length === 0, bound, 'the expired record to be deleted');
      expect(await peer.members('worker')).toEqual([]);
    });

    it('a crashed leader is replaced only after its lease, with a larger fencing token', async () => {
      const child = await h.crashChild('child');
      await child.command({ op: 'campaign', election: 'scheduler' }, bound);
      const { event: elected } = await child.event('elected', bound);
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
