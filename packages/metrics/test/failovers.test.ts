import type { DeadIncarnation, FailoverRun } from '@rollcall/core';
import { afterEach, describe, expect, it } from 'vitest';
import { MetricsHarness } from './harness.js';

// Core's defaults: member heartbeat 5 s, lease 20 s; election lease 15 s, renew deadline 10 s.
const MEMBER_LEASE = 20_000;

let h: MetricsHarness;
afterEach(async () => h?.closeAll());

/** A handler whose runs stay pending until the test settles them. */
function handler() {
  const runs: { dead: DeadIncarnation; run: FailoverRun; resolve: () => void; reject: (e: unknown) => void }[] = [];
  const fn = (dead: DeadIncarnation, run: FailoverRun) => new Promise<void>((resolve, reject) => void runs.push({ dead, run, resolve, reject }));
  return { runs, fn };
}

/** Worker `w1`, announced on its own registry: partition its store to crash it. */
async function worker(h: MetricsHarness) {
  const { registry, store } = await h.registry('w');
  await registry.announce({ role: 'worker', id: 'w1', payload: { items: [1] } });
  return store;
}

/** Advances the clock in 10 ms steps until a scrape shows `rollcall_failovers_pending{role="worker"}` at `value`, within `maxMs`. */
async function pendingBecomes(value: number, maxMs: number): Promise<boolean> {
  for (let spent = 0; spent <= maxMs; spent += 10) {
    if ((await h.value('rollcall_failovers_pending', { role: 'worker' })) === value) return true;
    await h.clock.advance(10);
  }
  return false;
}

describe('failover metrics', () => {
  it('a crashed worker: started and pending while its handler runs, acknowledged with the reason once it resolves, pending back to 0', async () => {
    h = new MetricsHarness();
    const { registry } = await h.watched('boss');
    const { runs, fn } = handler();
    const leadership = registry.campaign('scheduler');
    registry.failover('worker', leadership, fn);
    expect(await h.clock.advanceUntil(() => leadership.isLeader, 20_000)).toBe(true);
    const crashed = await worker(h);
    await h.clock.advance(1_000); // the leader notes it alive
    crashed.partition();
    expect(await h.clock.advanceUntil(() => runs.length === 1, MEMBER_LEASE + 10_000)).toBe(true);
    expect(await h.value('rollcall_failovers_started_total', { role: 'worker' })).toBe(1);
    expect(await h.value('rollcall_failovers_resumed_total', { role: 'worker' })).toBe(0);
    expect(await h.value('rollcall_failovers_pending', { role: 'worker' })).toBe(1);
    expect(await h.value('rollcall_failovers_acknowledged_total', { role: 'worker', reason: 'expired' })).toBeUndefined();

    runs[0]!.resolve();
    expect(await pendingBecomes(0, 2_000)).toBe(true);
    expect(await h.value('rollcall_failovers_acknowledged_total', { role: 'worker', reason: 'expired' })).toBe(1);
    await h.clock.advance(60_000);
    expect(runs).toHaveLength(1);
    expect(await h.value('rollcall_failovers_started_total', { role: 'worker' })).toBe(1);
  });

  it('a rejected run started again counts again; pending drops to 0 when the leader loses its term mid-handler', async () => {
    h = new MetricsHarness();
    const { registry, store } = await h.watched('boss');
    const { runs, fn } = handler();
    const leadership = registry.campaign('scheduler');
    registry.failover('worker', leadership, fn, { retryBackoff: { initialMs: 1_000, maxMs: 1_000, jitter: 0 } });
    expect(await h.clock.advanceUntil(() => leadership.isLeader, 20_000)).toBe(true);
    const crashed = await worker(h);
    await h.clock.advance(1_000);
    crashed.partition();
    expect(await h.clock.advanceUntil(() => runs.length === 1, MEMBER_LEASE + 10_000)).toBe(true);
    runs[0]!.reject(new Error('the task store is down'));
    expect(await h.clock.advanceUntil(() => runs.length === 2, 5_000, 10)).toBe(true);
    expect(await h.value('rollcall_failovers_started_total', { role: 'worker' })).toBe(2);
    expect(await h.value('rollcall_failovers_pending', { role: 'worker' })).toBe(1);

    store.partition(); // the leader is cut off: it steps down by its own renew deadline
    expect(await h.clock.advanceUntil(() => !leadership.isLeader, 20_000)).toBe(true);
    expect(runs[1]!.run.signal.aborted).toBe(true);
    expect(await h.value('rollcall_failovers_pending', { role: 'worker' })).toBe(0);
    expect(await h.value('rollcall_failovers_acknowledged_total', { role: 'worker', reason: 'expired' })).toBeUndefined();
  });

  it('a successor resumes what a dead leader claimed: counted as started and resumed, then acknowledged once', async () => {
    h = new MetricsHarness();
    const first = await h.registry('boss-1');
    const before = handler();
    const firstLeadership = first.registry.campaign('scheduler');
    first.registry.failover('worker', firstLeadership, before.fn);
    expect(await h.clock.advanceUntil(() => firstLeadership.isLeader, 20_000)).toBe(true);

    const { registry } = await h.watched('boss-2');
    const after = handler();
    const leadership = registry.campaign('scheduler');
    registry.failover('worker', leadership, after.fn);
    const crashed = await worker(h);
    await h.clock.advance(1_000);
    crashed.partition();
    expect(await h.clock.advanceUntil(() => before.runs.length === 1, MEMBER_LEASE + 10_000)).toBe(true);
    expect(await h.value('rollcall_failovers_started_total', { role: 'worker' })).toBeUndefined(); // not this process's

    first.store.partition(); // the first leader dies inside its handler, its claim not acknowledged
    expect(await h.clock.advanceUntil(() => after.runs.length === 1, 60_000)).toBe(true);
    expect(after.runs[0]!.run.resumed).toBe(true);
    expect(await h.value('rollcall_failovers_started_total', { role: 'worker' })).toBe(1);
    expect(await h.value('rollcall_failovers_resumed_total', { role: 'worker' })).toBe(1);
    expect(await h.value('rollcall_failovers_pending', { role: 'worker' })).toBe(1);
    after.runs[0]!.resolve();
    expect(await pendingBecomes(0, 2_000)).toBe(true);
    expect(await h.value('rollcall_failovers_acknowledged_total', { role: 'worker', reason: 'expired' })).toBe(1);
  });
});
