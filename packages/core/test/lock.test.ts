import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, LeaseLostError } from '../src/index.js';
import { Harness } from './harness.js';

describe('locks on the injected clock', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('renews itself while held and keeps others out', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const held = await a.registry.lock('jobs');
    expect(held.fencingToken).toBe(1);
    let bHolds = false;
    void b.registry.lock('jobs').then(() => (bHolds = true));
    await h.clock.advance(120_000);
    expect(held.held).toBe(true);
    expect(held.signal.aborted).toBe(false);
    expect(bHolds).toBe(false);
    await held.release();
    await h.clock.advance(0);
    expect(bHolds).toBe(true);
  });

  it('times out with LOCK_TIMEOUT, and a late acquisition is given back', async () => {
    h = new Harness();
    const a = await h.registry('a');
    await a.registry.lock('jobs');
    const waiting = a.registry.lock('jobs', { timeoutMs: 7_000 }).catch((e: unknown) => e);
    await h.clock.advance(6_999);
    await h.clock.advance(1);
    expect(await waiting).toMatchObject({ code: ErrorCode.LOCK_TIMEOUT });
  });

  it('aborts a wait through its signal with ABORTED', async () => {
    h = new Harness();
    const a = await h.registry('a');
    await a.registry.lock('jobs');
    const controller = new AbortController();
    const waiting = a.registry.lock('jobs', { signal: controller.signal }).catch((e: unknown) => e);
    await h.clock.advance(1_000);
    controller.abort();
    expect(await waiting).toMatchObject({ code: ErrorCode.ABORTED });
  });

  it('signals the loss at the renew deadline, before another contender acquires', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const order: string[] = [];
    const held = await a.registry.lock('jobs');
    held.signal.addEventListener('abort', () => order.push(`a lost @${h.clock.now()}`));
    void b.registry.lock('jobs').then((l) => order.push(`b acquired ${l.fencingToken} @${h.clock.now()}`));
    await h.clock.advance(1_000);
    a.store.partition();
    await h.clock.advance(40_000);
    expect(order).toEqual(['a lost @10000', 'b acquired 2 @15001']);
    expect(held.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(held.signal.reason).toMatchObject({ code: ErrorCode.LEASE_LOST, reason: 'renew-deadline' });
  });

  it('tryLock takes a free lock and returns undefined for a held one', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const first = await a.registry.tryLock('jobs');
    expect(first?.fencingToken).toBe(1);
    await h.clock.advance(0);
    expect(await b.registry.tryLock('jobs')).toBeUndefined();
    await first!.release();
    await h.clock.advance(0);
    const second = await b.registry.tryLock('jobs');
    expect(second?.fencingToken).toBe(2);
    // A tryLock holder renews like any holder.
    await h.clock.advance(60_000);
    expect(second!.held).toBe(true);
  });

  it('two waiters in one process exclude each other', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const first = await a.registry.lock('jobs');
    let second = false;
    void a.registry.lock('jobs').then(() => (second = true));
    await h.clock.advance(30_000);
    expect(second).toBe(false);
    await first.release();
    await h.clock.advance(0);
    expect(second).toBe(true);
  });

  it('rejects bad input and changes nothing', async () => {
    h = new Harness();
    const a = await h.registry('a');
    await expect(a.registry.lock('no/slash')).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await expect(a.registry.lock('ok', { timeoutMs: -1 })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    await expect(a.registry.tryLock('')).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    expect(h.backend.rows.size).toBe(0);
  });

  it('past its renew deadline a lock reads not held and its signal aborted before any timer runs', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const held = await a.registry.lock('jobs');
    await h.clock.advance(4_500); // renewed at 2000 and 4000: deadline 14000
    h.clock.jump(9_499);
    expect(held.held).toBe(true);
    expect(held.signal.aborted).toBe(false);
    h.clock.jump(1); // no timer has run
    expect(held.held).toBe(false);
    const signal = held.signal;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LeaseLostError);
    expect(signal.reason).toMatchObject({ code: ErrorCode.LEASE_LOST, reason: 'renew-deadline' });
    await h.clock.advance(0);
    expect(held.held).toBe(false);
  });
});
