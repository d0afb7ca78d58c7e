import type { DeadIncarnation, FailoverOptions, Registry } from '@rollcall/core';
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
    failover.on('acknowledged', (d) => acked.push(d.incarnation));
    await leadership.whenElected();
    return { registry, leadership, calls, acked };
  }

  /** Waits until `registry`'s failover term has noted the member (its view listed it): then its removal is the leader's to see. */
  async function present(registry: Registry, id: string) {
    await waitFor(async () => (await registry.members('worker')).some((m) => m.id === id), bound, `${id} to be present`);
  }

  describe('failover', () => {
    it('a withdrawn member is failed over once with includeWithdrawn, and a restarted leader never runs it again', async () => {
      const a = await leader('a', { includeWithdrawn: true });
      const m = await h.registry('m');
      const member = await m.announce({ role: 'worker', id: 'w1', payload: { items: [1] } });
      await present(a.registry, 'w1');
      await member.withdraw();
      await waitFor(() => a.acked.length === 1, bound + timings.requestTimeoutMs, 'the failover to be acknowledged');
      expect(a.calls).toHaveLength(1);
      expect(a.calls[0]!.dead).toMatchObject({ role: 'worker', id: 'w1', reason: 'deleted', lastPayload: { items: [1] } });
      expect(typeof a.calls[0]!.dead.incarnation).toBe('string');
      expect(a.calls[0]!.fencingToken).toBe(a.leadership.fencingToken);
      await a.registry.close();
      const b = await leader('b', { includeWithdrawn: true });
      await new Promise((resolve) => setTimeout(resolve, timings.member.leaseDurationMs + bound)); // a whole member lease and a watch: nothing to run
      expect(b.calls).toHaveLength(0);
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
