import type { LockHandle, Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { lockKey } from '@rollcall/core/spi';
import { describe, expect, it } from 'vitest';
import { skipReason } from '../capabilities.js';
import { observeFor, waitFor, whenAborted } from '../wait-for.js';
import { codeOf, type Harness } from './harness.js';

/** Locks: mutual exclusion, fencing, timeouts, try, watch-driven handover, the loss signal. */
export function lockCases(h: Harness): void {
  const { timings } = h;
  const bound = timings.watchBoundMs;
  const l = timings.lock;

  describe('locks', () => {
    it('mutual exclusion among 6 contenders guarding a non-atomic read-modify-write', async () => {
      const registries = await Promise.all(Array.from({ length: 5 }, (_, i) => h.registry(`contender-${i}`)));
      // Two contenders share the first registry: holds within one process exclude each other too.
      const contenders: Registry[] = [...registries, registries[0]!];
      const SECTIONS = 4;
      let counter = 0;
      let inside = 0;
      let sections = 0;
      let lastToken = 0;
      const violations: string[] = [];
      await Promise.all(
        contenders.map(async (registry, c) => {
          for (let s = 0; s < SECTIONS; s++) {
            const handle = await registry.lock('counter', { timeoutMs: 60_000 });
            inside++;
            if (inside !== 1) violations.push(`contender ${c} entered with ${inside - 1} other holder(s) inside`);
            if (handle.fencingToken <= lastToken) violations.push(`token ${handle.fencingToken} after ${lastToken}`);
            lastToken = handle.fencingToken;
            // Deliberately not atomic: read, yield to everyone else, write.
            const read = counter;
            await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4)));
            if (handle.signal.aborted) violations.push(`contender ${c} lost the lock inside its critical section`);
            counter = read + 1;
            sections++;
            inside--;
            await handle.release();
          }
        }),
      );
      expect(violations).toEqual([]);
      expect(sections).toBe(contenders.length * SECTIONS);
      expect(counter).toBe(sections);
    });

    it('fencing tokens strictly increase across holders and holds', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const c = await h.registry('c');
      const tokens: number[] = [];
      const take = async (r: Registry) => {
        const handle = await r.lock('fenced', { timeoutMs: bound * 4 });
        tokens.push(handle.fencingToken);
        await handle.release();
      };
      await take(a);
      await take(b);
      await take(a);
      const tried = await waitFor(() => c.tryLock('fenced'), bound, 'c to get the free lock');
      tokens.push(tried.fencingToken);
      await tried.release();
      await take(b);
      for (let i = 1; i < tokens.length; i++) expect(tokens[i]!).toBeGreaterThan(tokens[i - 1]!);
    });

    it('lock() gives up with LOCK_TIMEOUT after timeoutMs, and the holder keeps the lock', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const held = await a.lock('l');
      const before = await registryStore(a).get(lockKey('l'));
      const started = performance.now();
      expect(await codeOf(b.lock('l', { timeoutMs: 600 }))).toBe('LOCK_TIMEOUT');
      expect(performance.now() - started).toBeGreaterThanOrEqual(600 - timings.toleranceMs);
      expect(held.held).toBe(true);
      expect(held.signal.aborted).toBe(false);
      const after = await registryStore(a).get(lockKey('l'));
      expect(after?.record.holderIdentity).toBe(before?.record.holderIdentity);
      expect(after?.record.leaseTransitions).toBe(held.fencingToken);
      // The timed-out waiter left nothing behind: the lock is b's as soon as it is free.
      const waiting = b.lock('l', { timeoutMs: bound * 2 });
      await held.release();
      const next = await waiting;
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    });

    it('tryLock() returns undefined while the lock is held, and a handle once it is free', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const held = await a.lock('l');
      expect(await b.tryLock('l')).toBeUndefined();
      expect(await a.tryLock('l')).toBeUndefined(); // a second hold in the holder's own process is refused too
      await held.release();
      const taken = await waitFor(() => b.tryLock('l'), bound, 'b to get the free lock');
      expect(taken.held).toBe(true);
      expect(taken.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(await a.tryLock('l')).toBeUndefined();
    });

    it('release() hands the lock to a waiter through the watch, not at the next poll', async () => {
      const slow = timings.slowLease;
      const a = await h.registry('a', h.slow());
      const b = await h.registry('b', h.slow());
      const held = await a.lock('l');
      const startedB = performance.now();
      let acquiredAt: number | undefined;
      const waiting = b.lock('l').then((handle) => {
        acquiredAt = performance.now();
        return handle;
      });
      await observeFor(5 * timings.toleranceMs);
      expect(acquiredAt).toBeUndefined();
      const released = performance.now();
      await held.release();
      const next = await waiting;
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(acquiredAt! - released).toBeLessThan(bound);
      expect(acquiredAt! - startedB).toBeLessThan(slow.retryPeriodMs);
    });

    it('a lock() wait ends with ABORTED when its AbortSignal aborts, and leaves the lock alone', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const held = await a.lock('l');
      const controller = new AbortController();
      const waiting = codeOf(b.lock('l', { signal: controller.signal }));
      controller.abort();
      expect(await waiting).toBe('ABORTED');
      expect(await codeOf(b.lock('l', { signal: AbortSignal.abort() }))).toBe('ABORTED');
      expect(held.held).toBe(true);
      await held.release();
      const next = await waitFor(() => b.tryLock('l'), bound, 'b to get the free lock');
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    });

    it("release() aborts the handle's signal with LEASE_LOST (reason released) and is idempotent", async () => {
      const a = await h.registry('a');
      const held = await a.lock('l');
      expect(held.name).toBe('l');
      expect(held.held).toBe(true);
      await held.release();
      await held.release();
      const reason = (await whenAborted(held.signal, bound)) as { code?: string; reason?: string };
      expect(reason.code).toBe('LEASE_LOST');
      expect(reason.reason).toBe('released');
      expect(held.held).toBe(false);
    });

    if (h.capabilities.partition) {
      it("the lock's AbortSignal fires when the holder is cut off past its renew deadline, before any other contender acquires", async () => {
        const holder = await h.registry('holder');
        const contenders = await Promise.all(Array.from({ length: 4 }, (_, i) => h.registry(`contender-${i}`)));
        const held: LockHandle = await holder.lock('l');
        let abortedAt: number | undefined;
        held.signal.addEventListener('abort', () => (abortedAt = performance.now()), { once: true });
        const acquired: { at: number; token: number; holderAborted: boolean }[] = [];
        for (const c of contenders) c.on('lockAcquired', ({ fencingToken }) => acquired.push({ at: performance.now(), token: fencingToken, holderAborted: held.signal.aborted }));
        const waits = contenders.map((c) => c.lock('l'));
        const cutAt = performance.now();
        await h.partition(holder);
        await waitFor(() => acquired.length > 0, l.leaseDurationMs + bound, 'a contender to acquire');
        expect(abortedAt, 'the signal fired').toBeDefined();
        expect(abortedAt!).toBeLessThan(acquired[0]!.at);
        expect(acquired[0]!.holderAborted).toBe(true);
        expect(abortedAt! - cutAt).toBeLessThanOrEqual(l.renewDeadlineMs + timings.toleranceMs);
        expect(acquired[0]!.at - cutAt).toBeGreaterThanOrEqual(l.leaseDurationMs - l.retryPeriodMs - timings.toleranceMs);
        expect(acquired[0]!.token).toBeGreaterThan(held.fencingToken);
        const reason = held.signal.reason as { code?: string; reason?: string };
        expect(reason.code).toBe('LEASE_LOST');
        expect(reason.reason).toBe('renew-deadline');
        expect(held.held).toBe(false);
        // One holder at a time among the contenders, too.
        const first = await Promise.race(waits);
        expect(first.fencingToken).toBe(acquired[0]!.token);
        expect(acquired).toHaveLength(1);
      });
    } else {
      it.skip(skipReason(h.backend, 'partition', "the lock's AbortSignal fires on loss, before any other contender acquires"), () => {});
    }
  });
}
