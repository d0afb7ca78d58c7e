import type { DeadIncarnation, FailoverOptions, Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { memberKey } from '@rollcall/core/spi';
import { describe, expect, it } from 'vitest';
import { skipReason } from '../capabilities.js';
import { waitFor } from '../wait-for.js';
import type { Harness } from './harness.js';

/** `registry.failover()`: a handler run once per removed member incarnation, while leading, across a leader's restart. */
export function failoverCases(h: Harness): void {
  const { timings } = h;
  const bound = timings.watchBoundMs;

  /** `identity` leading `scheduler` and failing `worker` over, recording each call. */
  async function leader(identity: string, options: FailoverOptions = {}) {
    const registry = await h.registry(identity);
    const leadership = registry.campaign('scheduler');
    const calls: { dead: DeadIncarnation; fencingToken: number; resumed: boolean }[] = [];
    const failover = registry.failover('worker', leadership, async (dead, run) => void calls.push({ dead, fencingToken: run.fencingToken, resumed: run.resumed }), options);
    const acked: string[] = [];
    const skipped: DeadIncarnation[] = [];
    failover.on('acknowledged', (d) => acked.push(d.incarnation));
    failover.on('skipped', (d) => skipped.push(d));
    await leadership.whenElected();
    return { registry, leadership, calls, acked, skipped };
  }

  /** Waits until `registry`'s failover term has noted the member (its view listed it): then its removal is the leader's to see. */
  async function present(registry: Registry, id: string) {
    await waitFor(async () => (await registry.members('worker')).some((m) => m.id === id), bound, `${id} to be present`);
  }

  /** Waits until the leader has noted `incarnation` `seen` in its failover record: its removal is then judged against that record. */
  async function seen(registry: Registry, incarnation: string) {
    const store = registryStore(registry);
    await waitFor(async () => (await store.list('failover/worker/w1/')).records.some((r) => r.key.endsWith(`/${incarnation}`)), bound + timings.requestTimeoutMs, `the failover record of ${incarnation}`);
  }

  /** A withdraw's reason as the leader reports it: what it saw, or on a folding watch a delete it cannot explain. */
  const withdrawReasons = h.capabilities.foldingWatch ? ['withdrawn', 'deleted'] : ['withdrawn'];

  describe('failover', () => {
    it('a withdrawn member is failed over once with includeWithdrawn, and a restarted leader never runs it again', async () => {
      const a = await leader('a', { includeWithdrawn: true });
      const m = await h.registry('m');
      const member = await m.announce({ role: 'worker', id: 'w1', payload: { items: [1] } });
      await present(a.registry, 'w1');
      await member.withdraw();
      await waitFor(() => a.acked.length === 1, bound + timings.requestTimeoutMs, 'the failover to be acknowledged');
      expect(a.calls).toHaveLength(1);
      expect(a.calls[0]!.dead).toMatchObject({ role: 'worker', id: 'w1', lastPayload: { items: [1] } });
      // `withdrawn`: the leader saw the withdraw mark; a watch that folds it into the delete leaves a delete it cannot explain.
      expect(withdrawReasons).toContain(a.calls[0]!.dead.reason);
      expect(typeof a.calls[0]!.dead.incarnation).toBe('string');
      expect(a.calls[0]!.fencingToken).toBe(a.leadership.fencingToken);
      await a.registry.close();
      const b = await leader('b', { includeWithdrawn: true });
      await new Promise((resolve) => setTimeout(resolve, timings.member.leaseDurationMs + bound)); // a whole member lease and a watch: nothing to run
      expect(b.calls).toHaveLength(0);
    });

    it('a graceful withdraw is skipped by default (reason withdrawn) and run by no leader — or, where the watch folds its mark, run once as deleted', async () => {
      const a = await leader('a');
      const m = await h.registry('m');
      const member = await m.announce({ role: 'worker', id: 'w1', payload: { items: [3] } });
      const incarnation = member.incarnation!;
      await present(a.registry, 'w1');
      await seen(a.registry, incarnation);
      await member.withdraw();
      await waitFor(() => a.skipped.length + a.acked.length === 1, bound + timings.requestTimeoutMs, 'the withdraw to be skipped or acknowledged');
      if (a.skipped.length === 1) {
        expect(a.skipped[0]).toMatchObject({ id: 'w1', incarnation, reason: 'withdrawn' });
        expect(a.calls).toEqual([]);
      } else {
        expect(h.capabilities.foldingWatch, 'only a watch that folds the withdraw mark away may leave the leader a delete it cannot explain').toBe(true);
        expect(a.calls.map((c) => [c.dead.incarnation, c.dead.reason])).toEqual([[incarnation, 'deleted']]);
      }
    });

    it('a member record deleted without the withdraw mark (a member of the release before it; a crash whose expiry mark the leader missed) is failed over once, reason deleted', async () => {
      const a = await leader('a');
      const m = await h.registry('m');
      const member = await m.announce({ role: 'worker', id: 'w1', payload: { items: [4] } });
      const incarnation = member.incarnation!;
      await present(a.registry, 'w1');
      await seen(a.registry, incarnation);
      const store = registryStore(m);
      const stored = await store.get(memberKey('worker', 'w1'));
      expect(stored?.created).toBe(incarnation);
      await store.delete(stored!.key, stored!.version);
      await waitFor(() => a.acked.includes(incarnation), bound + timings.requestTimeoutMs, 'the failover to be acknowledged');
      // Its member, finding its record gone, announces a new incarnation; a watch that folds the delete into that create says `replaced`.
      const reasons = h.capabilities.foldingWatch ? ['deleted', 'replaced'] : ['deleted'];
      const runs = a.calls.filter((c) => c.dead.incarnation === incarnation);
      expect(runs).toHaveLength(1);
      expect(reasons).toContain(runs[0]!.dead.reason);
      expect(runs[0]!.dead.lastPayload).toEqual({ items: [4] });
      expect(a.skipped).toEqual([]);
    });

    if (!h.capabilities.partition) {
      it.skip(`${skipReason(h.backend, 'partition', '')}a member cut off past its lease is failed over once, reason expired`, () => {});
      return;
    }
    it('a member cut off past its lease is failed over once, reason expired', async () => {
      const a = await leader('a');
      const m = await h.registry('m');
      await m.announce({ role: 'worker', id: 'w1', payload: { items: [2] } });
      await present(a.registry, 'w1');
      const cutAt = performance.now();
      await h.partition(m);
      const lapse = await h.lapse(m, cutAt); // in the pod mode its pod turns not Ready: cut off is not gone there
      await waitFor(() => a.acked.length === 1, lapse.maxMs + bound + timings.requestTimeoutMs, 'the failover to be acknowledged');
      expect(a.calls.map((c) => [c.dead.id, c.dead.reason, c.resumed])).toEqual([['w1', 'expired', false]]);
      expect(a.calls[0]!.dead.lastPayload).toEqual({ items: [2] });
    });
  });
}
