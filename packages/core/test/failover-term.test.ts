import { afterEach, describe, expect, it } from 'vitest';
import type { DeadIncarnation, FailoverOptions, FailoverRun, Leadership } from '../src/index.js';
import { failoverKey, failoverStateOf, FAILOVER_PREFIX } from '../src/failover-record.js';
import { memberKey } from '../src/record-key.js';
import { Harness, until } from './harness.js';

// Defaults: member heartbeat 5 s, lease 20 s; election lease 15 s, renew deadline 10 s, retry 2 s.
const MEMBER_LEASE = 20_000;

interface Call {
  dead: DeadIncarnation;
  run: FailoverRun;
  settle: { resolve: () => void; reject: (e: unknown) => void };
}

/** A handler that records each call and leaves it pending until the test settles it (or settles at once with `auto`). */
function handler(auto?: 'resolve') {
  const calls: Call[] = [];
  const fn = (dead: DeadIncarnation, run: FailoverRun) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ dead, run, settle: { resolve, reject } });
      if (auto === 'resolve') resolve();
    });
  return { calls, fn };
}

/** Leader `name` campaigning for `boss` and failing `worker` over with `fn`. */
async function leader(h: Harness, name: string, fn: (d: DeadIncarnation, r: FailoverRun) => Promise<void>, options: FailoverOptions = {}) {
  const { registry, store } = await h.registry(name);
  const leadership = registry.campaign('boss');
  const failover = registry.failover('worker', leadership, fn, options);
  return { registry, store, leadership, failover };
}

function state(h: Harness, key: string) {
  const row = h.backend.rows.get(`test/${key}`);
  return row ? (failoverStateOf({ key, version: '', created: '', record: row.record }) as Record<string, unknown>) : undefined;
}

function failoverKeys(h: Harness): string[] {
  return [...h.backend.rows.keys()].filter((k) => k.startsWith(`test/${FAILOVER_PREFIX}`)).map((k) => k.slice('test/'.length));
}

/** A worker announced as `w1`; its incarnation is its member record's creation. */
async function worker(h: Harness, name = 'w') {
  const { registry, store } = await h.registry(name);
  const handle = await registry.announce({ role: 'worker', id: 'w1', payload: { items: [1, 2] } });
  const incarnation = (await store.get(memberKey('worker', 'w1')))!.created;
  return { registry, store, handle, incarnation, key: failoverKey('worker', 'w1', incarnation) };
}

/** Lets the term's queue run (its keys are due at once, on the manual clock) until `condition` holds, within 2 s. */
async function soon(h: Harness, condition: () => boolean) {
  expect(await h.clock.advanceUntil(condition, 2_000, 10)).toBe(true);
}

async function elected(h: Harness, leadership: Leadership) {
  expect(await h.clock.advanceUntil(() => leadership.isLeader, 20_000)).toBe(true);
}

describe('failover term (manual clock, memory store)', () => {
  let h: Harness;
  afterEach(async () => h && (await h.closeAll()));

  it('runs once for an expired incarnation and acknowledges it', async () => {
    h = new Harness();
    const { calls, fn } = handler('resolve');
    const l = await leader(h, 'l', fn);
    await elected(h, l.leadership);
    const w = await worker(h);
    await soon(h, () => state(h, w.key)?.state === 'seen'); // noted while alive: a successor knows of it
    w.store.partition(); // crashed: no more heartbeats
    expect(await h.clock.advanceUntil(() => state(h, w.key)?.state === 'acked', MEMBER_LEASE + 10_000)).toBe(true);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.dead).toEqual({ role: 'worker', id: 'w1', incarnation: w.incarnation, lastPayload: { items: [1, 2] }, reason: 'expired' });
    expect(calls[0]!.run).toMatchObject({ fencingToken: l.leadership.fencingToken, resumed: false, attempt: 1 });
    expect(state(h, w.key)).toMatchObject({ state: 'acked', token: l.leadership.fencingToken, claims: 1 });
    await h.clock.advance(120_000);
    expect(calls).toHaveLength(1);
    expect(l.failover.pending).toBe(0);
  });

  it('retries a rejected handler with backoff and acknowledges it once', async () => {
    h = new Harness();
    const { calls, fn } = handler();
    const l = await leader(h, 'l', fn, { retryBackoff: { initialMs: 1000, factor: 2, jitter: 0 } });
    const failed: number[] = [];
    l.failover.on('failed', (e) => failed.push(e.retryInMs));
    await elected(h, l.leadership);
    const w = await worker(h);
    w.store.partition();
    expect(await h.clock.advanceUntil(() => calls.length === 1, MEMBER_LEASE + 10_000)).toBe(true);
    calls[0]!.settle.reject(new Error('resource busy'));
    await until(() => failed.length === 1);
    await h.clock.advance(999);
    expect(calls).toHaveLength(1); // not before its backoff
    await h.clock.advance(1);
    expect(calls).toHaveLength(2);
    calls[1]!.settle.reject(new Error('still busy'));
    await until(() => failed.length === 2);
    await h.clock.advance(1999);
    expect(calls).toHaveLength(2);
    await h.clock.advance(1);
    expect(calls.map((c) => c.run.attempt)).toEqual([1, 2, 3]);
    expect(failed).toEqual([1000, 2000]);
    expect(state(h, w.key)?.state).toBe('claimed');
    expect(l.failover.pending).toBe(1);
    calls[2]!.settle.resolve();
    await soon(h, () => state(h, w.key)?.state === 'acked');
    await h.clock.advance(120_000);
    expect(calls).toHaveLength(3);
    expect(l.failover.pending).toBe(0);
  });

  it('a term lost mid-handler aborts its signal and does not acknowledge; a successor resumes it with resumed: true', async () => {
    h = new Harness();
    const first = handler();
    const l = await leader(h, 'l', first.fn);
    await elected(h, l.leadership);
    const second = handler('resolve');
    const s = await leader(h, 's', second.fn);
    const w = await worker(h);
    w.store.partition();
    expect(await h.clock.advanceUntil(() => first.calls.length === 1, MEMBER_LEASE + 10_000)).toBe(true);
    const token = l.leadership.fencingToken!;
    const signal = first.calls[0]!.run.signal;
    expect(signal.aborted).toBe(false);
    l.store.partition(); // the leader is cut off mid-handler: it loses by its renew deadline
    expect(await h.clock.advanceUntil(() => !l.leadership.isLeader, 12_000)).toBe(true);
    expect(signal.aborted).toBe(true);
    first.calls[0]!.settle.resolve(); // finished too late: its term is over
    await h.clock.advance(100);
    expect(state(h, w.key)).toMatchObject({ state: 'claimed', token });
    expect(await h.clock.advanceUntil(() => state(h, w.key)?.state === 'acked', 30_000)).toBe(true);
    expect(second.calls).toHaveLength(1);
    expect(second.calls[0]!.run.resumed).toBe(true);
    expect(second.calls[0]!.run.fencingToken).toBeGreaterThan(token);
    expect(second.calls[0]!.dead).toMatchObject({ incarnation: w.incarnation, reason: 'expired', lastPayload: { items: [1, 2] } });
    expect(state(h, w.key)).toMatchObject({ state: 'acked', token: s.leadership.fencingToken, claims: 2 });
  });

  it("a deposed leader's acknowledgement is refused once its successor claimed the incarnation", async () => {
    h = new Harness();
    const first = handler();
    const l = await leader(h, 'l', first.fn);
    await elected(h, l.leadership);
    const second = handler();
    const s = await leader(h, 's', second.fn);
    const w = await worker(h);
    w.store.partition();
    expect(await h.clock.advanceUntil(() => first.calls.length === 1, MEMBER_LEASE + 10_000)).toBe(true);
    l.store.partition();
    expect(await h.clock.advanceUntil(() => second.calls.length === 1, 40_000)).toBe(true);
    // The deposed term is closed: even healed, its late resolve writes nothing over the successor's claim.
    l.store.heal();
    first.calls[0]!.settle.resolve();
    await h.clock.advance(100);
    expect(state(h, w.key)).toMatchObject({ state: 'claimed', token: s.leadership.fencingToken });
    second.calls[0]!.settle.resolve();
    await soon(h, () => state(h, w.key)?.state === 'acked');
    expect(state(h, w.key)).toMatchObject({ token: s.leadership.fencingToken });
  });

  it('never runs an acknowledged incarnation again after a restart', async () => {
    h = new Harness();
    const first = handler('resolve');
    const l = await leader(h, 'l', first.fn);
    await elected(h, l.leadership);
    const w = await worker(h);
    w.store.partition();
    expect(await h.clock.advanceUntil(() => state(h, w.key)?.state === 'acked', MEMBER_LEASE + 10_000)).toBe(true);
    await l.registry.close(); // a restart: resigns, then a new process of the same identity
    const again = handler('resolve');
    const l2 = await leader(h, 'l', again.fn);
    await elected(h, l2.leadership);
    await h.clock.advance(120_000);
    expect(again.calls).toHaveLength(0);
    expect(first.calls).toHaveLength(1);
    expect(state(h, w.key)?.state).toBe('acked');
  });

  it('fails over an incarnation a crashed leader saw alive but never claimed', async () => {
    h = new Harness();
    const first = handler('resolve');
    const l = await leader(h, 'l', first.fn);
    await elected(h, l.leadership);
    const w = await worker(h);
    await soon(h, () => state(h, w.key)?.state === 'seen');
    l.store.partition(); // the leader dies first
    w.store.partition(); // then the worker, while nobody leads
    const successor = handler('resolve');
    const s = await leader(h, 's', successor.fn);
    expect(await h.clock.advanceUntil(() => state(h, w.key)?.state === 'acked', 120_000)).toBe(true);
    expect(first.calls).toHaveLength(0);
    expect(successor.calls).toHaveLength(1);
    expect(successor.calls[0]!.dead).toMatchObject({ incarnation: w.incarnation, lastPayload: { items: [1, 2] }, reason: 'expired' });
    expect(s.leadership.isLeader).toBe(true);
  });

  it('skips a withdrawn member by default, and handles it with includeWithdrawn', async () => {
    h = new Harness();
    const skipping = handler('resolve');
    const l = await leader(h, 'l', skipping.fn);
    await elected(h, l.leadership);
    const w = await worker(h);
    await w.handle.withdraw();
    await soon(h, () => state(h, w.key)?.state === 'skipped');
    await h.clock.advance(60_000);
    expect(skipping.calls).toHaveLength(0);
    l.failover.close();

    const handling = handler('resolve');
    const both = l.registry.failover('worker', l.leadership, handling.fn, { includeWithdrawn: true });
    const w2 = await worker(h, 'w2');
    await soon(h, () => state(h, w2.key)?.state === 'seen');
    await w2.handle.withdraw();
    await soon(h, () => state(h, w2.key)?.state === 'acked');
    expect(handling.calls.map((c) => c.dead.reason)).toEqual(['withdrawn']);
    expect(handling.calls[0]!.dead.incarnation).toBe(w2.incarnation);
    both.close();
  });

  it('keeps done records for retentionMs, and at most maxRetained of them', async () => {
    h = new Harness();
    const { fn } = handler('resolve');
    const l = await leader(h, 'l', fn, { retentionMs: 60_000, maxRetained: 1 });
    await elected(h, l.leadership);
    const a = await worker(h, 'a');
    await a.handle.withdraw();
    await soon(h, () => state(h, a.key)?.state === 'skipped');
    await h.clock.advance(30_000);
    expect(failoverKeys(h)).toEqual([a.key]);
    const b = await worker(h, 'b');
    await b.handle.withdraw();
    await soon(h, () => state(h, b.key)?.state === 'skipped');
    await soon(h, () => !failoverKeys(h).includes(a.key)); // over maxRetained: the oldest goes
    expect(failoverKeys(h)).toEqual([b.key]);
    await h.clock.advance(59_000);
    expect(failoverKeys(h)).toEqual([b.key]);
    await h.clock.advance(1_500);
    expect(failoverKeys(h)).toEqual([]);
  });

  it('runs nothing while not leading', async () => {
    h = new Harness();
    const { registry } = await h.registry('holder');
    const holder = registry.campaign('boss');
    expect(await h.clock.advanceUntil(() => holder.isLeader, 20_000)).toBe(true);
    const { calls, fn } = handler('resolve');
    const f = await leader(h, 'f', fn);
    const w = await worker(h);
    w.store.partition();
    await h.clock.advance(MEMBER_LEASE + 20_000);
    expect(calls).toHaveLength(0);
    expect(f.failover.active).toBe(false);
    expect(failoverKeys(h)).toEqual([]);
  });
});

