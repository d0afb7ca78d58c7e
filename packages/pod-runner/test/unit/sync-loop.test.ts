import { ManualClock } from '@rollcall/core/testing';
import { describe, expect, it } from 'vitest';
import { SyncLoop } from '../../src/sync-loop.js';

/** A sync that waits for the test to finish it: one deferred answer per call. */
function heldSyncs() {
  const calls: { id: string; at: number; finish(wake?: number): void; fail(err: Error): void }[] = [];
  let clock: ManualClock;
  return {
    bind(c: ManualClock) {
      clock = c;
    },
    calls,
    sync: (id: string) =>
      new Promise<number | undefined>((resolve, reject) => {
        calls.push({ id, at: clock.now(), finish: resolve, fail: reject });
      }),
  };
}

/** A manual clock and held syncs on it. */
function setup() {
  const clock = new ManualClock();
  const held = heldSyncs();
  held.bind(clock);
  return { clock, held };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('SyncLoop', () => {
  it('collapses enqueues before a sync into one, and an enqueue during a sync into exactly one more after it', async () => {
    const { clock, held } = setup();
    const loop = new SyncLoop({ clock, sync: held.sync });
    for (let i = 0; i < 5; i++) loop.enqueue('a');
    await clock.advance(0);
    expect(held.calls.map((c) => c.id)).toEqual(['a']);
    loop.enqueue('a');
    loop.enqueue('a');
    await clock.advance(100);
    expect(held.calls).toHaveLength(1); // never two syncs of one id at once
    held.calls[0]!.finish();
    await settle();
    await clock.advance(0);
    expect(held.calls).toHaveLength(2);
    held.calls[1]!.finish();
    await settle();
    await clock.advance(10_000);
    expect(held.calls).toHaveLength(2);
    await loop.close();
  });

  it('looks again at the wake time a sync returns; a later enqueue never postpones it, an earlier one brings it forward', async () => {
    const { clock, held } = setup();
    const loop = new SyncLoop({ clock, sync: held.sync });
    loop.enqueue('a');
    await clock.advance(0);
    held.calls[0]!.finish(1_000);
    await settle();
    loop.enqueue('a', 5_000); // later than the wake: kept at 1000
    await clock.advance(999);
    expect(held.calls).toHaveLength(1);
    await clock.advance(1);
    expect(held.calls.map((c) => c.at)).toEqual([0, 1_000]);
    held.calls[1]!.finish(60_000);
    await settle();
    loop.enqueue('a', 10); // earlier than the wake: brought forward
    await clock.advance(10);
    expect(held.calls.map((c) => c.at)).toEqual([0, 1_000, 1_010]);
    held.calls[2]!.finish();
    await loop.close();
  });

  it('a wake asked for by the sync itself and an event during the sync: one more sync, at the earlier of the two', async () => {
    const { clock, held } = setup();
    const loop = new SyncLoop({ clock, sync: held.sync });
    loop.enqueue('a');
    await clock.advance(0);
    loop.enqueue('a', 300); // an event during the sync
    held.calls[0]!.finish(2_000);
    await settle();
    await clock.advance(299);
    expect(held.calls).toHaveLength(1);
    await clock.advance(1);
    expect(held.calls.map((c) => c.at)).toEqual([0, 300]);
    held.calls[1]!.finish();
    await loop.close();
  });

  it('a failed sync is retried with a growing backoff, reset by a success', async () => {
    const { clock, held } = setup();
    const errors: string[] = [];
    const loop = new SyncLoop({ clock, sync: held.sync, onError: (id, err) => errors.push(`${id}: ${(err as Error).message}`), retryInitialMs: 1_000 });
    loop.enqueue('a');
    await clock.advance(0);
    for (let i = 0; i < 4; i++) {
      held.calls.at(-1)!.fail(new Error(`refused ${i}`));
      await settle();
      await clock.advanceUntil(() => held.calls.length === i + 2, 100_000, 10);
    }
    const gaps = held.calls.slice(1).map((c, i) => c.at - held.calls[i]!.at);
    // 1 s, 2 s, 4 s, 8 s, each shortened by up to a fifth (jitter)
    gaps.forEach((gap, i) => {
      expect(gap).toBeGreaterThanOrEqual(0.8 * 1_000 * 2 ** i - 10);
      expect(gap).toBeLessThanOrEqual(1_000 * 2 ** i + 10);
    });
    expect(errors).toHaveLength(4);
    held.calls.at(-1)!.finish();
    await settle();
    loop.enqueue('a');
    await clock.advance(0);
    held.calls.at(-1)!.fail(new Error('again'));
    await settle();
    const before = held.calls.length;
    await clock.advanceUntil(() => held.calls.length > before, 100_000, 10);
    expect(held.calls.at(-1)!.at - held.calls.at(-2)!.at).toBeLessThanOrEqual(1_010); // back to the first step
    held.calls.at(-1)!.finish();
    await loop.close();
  });

  it('runs at most `concurrency` syncs at once; the rest start in the order they fell due as slots free', async () => {
    const { clock, held } = setup();
    const loop = new SyncLoop({ clock, sync: held.sync, concurrency: 2 });
    for (const id of ['a', 'b', 'c', 'd']) loop.enqueue(id);
    await clock.advance(0);
    expect(held.calls.map((c) => c.id)).toEqual(['a', 'b']);
    held.calls[1]!.finish();
    await settle();
    expect(held.calls.map((c) => c.id)).toEqual(['a', 'b', 'c']);
    held.calls[0]!.finish();
    await settle();
    expect(held.calls.map((c) => c.id)).toEqual(['a', 'b', 'c', 'd']);
    held.calls[2]!.finish();
    held.calls[3]!.finish();
    await loop.close();
  });

  it('syncs that never wait on I/O leave turns of the event loop between them: a macrotask queued meanwhile runs before the pass ends (issue 35)', async () => {
    const clock = new ManualClock();
    const done: string[] = [];
    const loop = new SyncLoop({ clock, sync: async (id) => void done.push(id) });
    const ids = Array.from({ length: 1000 }, (_, i) => `t${i}`);
    for (const id of ids) loop.enqueue(id);
    // queued after the loop's own turn: it stands for an answer read or a deadline's timer, which must not wait for 1000 syncs
    const seenByMacrotask = await new Promise<number>((resolve) => setImmediate(() => resolve(done.length)));
    expect(seenByMacrotask).toBeGreaterThan(0);
    expect(seenByMacrotask).toBeLessThan(ids.length);
    for (let turns = 0; done.length < ids.length && turns < 1000; turns++) await settle();
    // still every id once, in the order enqueued
    expect(done).toEqual(ids);
    await loop.close();
  });

  it('close() waits for the syncs in flight and runs nothing after', async () => {
    const { clock, held } = setup();
    const loop = new SyncLoop({ clock, sync: held.sync });
    loop.enqueue('a');
    loop.enqueue('b', 1_000);
    await clock.advance(0);
    let closed = false;
    const closing = loop.close().then(() => (closed = true));
    await settle();
    expect(closed).toBe(false);
    held.calls[0]!.finish(10);
    await closing;
    loop.enqueue('c');
    await clock.advance(5_000);
    expect(held.calls.map((c) => c.id)).toEqual(['a']);
  });

  it('random enqueues, wakes, failures and finishes (seeded): never two syncs of one id at once, and every enqueue is followed by a sync that started after it', async () => {
    for (let seed = 1; seed <= 30; seed++) {
      let state = seed;
      const random = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const clock = new ManualClock();
      const live = new Set<string>();
      const inFlight: { id: string; finish(wake?: number): void; fail(err: Error): void }[] = [];
      const lastEnqueue = new Map<string, number>();
      const lastStart = new Map<string, number>();
      const overlaps: string[] = [];
      let step = 0;
      const loop = new SyncLoop({
        clock,
        concurrency: 3,
        retryInitialMs: 50,
        sync: (id) =>
          new Promise((finish, fail) => {
            if (live.has(id)) overlaps.push(`seed ${seed}: two syncs of ${id} at once, step ${step}`);
            live.add(id);
            lastStart.set(id, step);
            inFlight.push({ id, finish: (w) => (live.delete(id), finish(w)), fail: (e) => (live.delete(id), fail(e)) });
          }),
      });
      const ids = ['a', 'b', 'c', 'd', 'e'];
      for (step = 1; step <= 300; step++) {
        const r = random();
        if (r < 0.4) {
          const id = ids[Math.floor(random() * ids.length)]!;
          lastEnqueue.set(id, step);
          loop.enqueue(id, random() < 0.5 ? 0 : Math.floor(random() * 500));
        } else if (r < 0.75 && inFlight.length > 0) {
          const [call] = inFlight.splice(Math.floor(random() * inFlight.length), 1);
          if (random() < 0.2) call!.fail(new Error('refused'));
          else call!.finish(random() < 0.3 ? Math.floor(random() * 1_000) : undefined);
        } else {
          await clock.advance(Math.floor(random() * 200));
        }
        await settle();
      }
      // quiesce: finish everything, let every due time pass
      for (let i = 0; i < 200 && (inFlight.length > 0 || loop.pending > 0); i++) {
        for (const call of inFlight.splice(0)) call.finish();
        await settle();
        await clock.advance(1_000);
        await settle();
      }
      expect(overlaps).toEqual([]);
      for (const [id, at] of lastEnqueue) expect(lastStart.get(id) ?? -1, `seed ${seed}: ${id} enqueued at step ${at} and never synced after`).toBeGreaterThanOrEqual(at);
      await loop.close();
    }
  });
});
