import type { Clock, Timer } from './clock.js';

interface PendingTimer {
  due: number;
  seq: number;
  fn: () => void;
}

/** Lets every queued promise continuation run: memory-store operations settle as microtasks. */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * A clock that moves only when told, for algorithm tests. `advance()` fires due
 * timers in order and lets the promises they start settle between them, so a
 * test can step through 15 s of lease time in microseconds.
 */
export class ManualClock implements Clock {
  private monotonic = 0;
  private wallOffsetMs: number;
  private seq = 0;
  private timers: PendingTimer[] = [];

  /** @param wallStart wall-clock time at monotonic 0. Default 2026-01-01T00:00:00Z. */
  constructor(wallStart = Date.UTC(2026, 0, 1)) {
    this.wallOffsetMs = wallStart;
  }

  now(): number {
    return this.monotonic;
  }

  wallNow(): Date {
    return new Date(this.wallOffsetMs + this.monotonic);
  }

  /** Moves the wall clock only, as a host whose clock is off would. */
  skewWall(offsetMs: number): void {
    this.wallOffsetMs += offsetMs;
  }

  setTimeout(fn: () => void, delayMs: number): Timer {
    const timer: PendingTimer = { due: this.monotonic + Math.max(0, delayMs), seq: this.seq++, fn };
    this.timers.push(timer);
    return { cancel: () => (this.timers = this.timers.filter((t) => t !== timer)) };
  }

  /** Advances time by `ms`, firing every timer that falls due, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.monotonic + ms;
    await settle();
    for (;;) {
      const next = this.timers.filter((t) => t.due <= target).sort((a, b) => a.due - b.due || a.seq - b.seq)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.monotonic = Math.max(this.monotonic, next.due);
      next.fn();
      await settle();
    }
    // a jump() made by a timer or a listener during the advance stays: time never goes back
    this.monotonic = Math.max(this.monotonic, target);
    await settle();
  }

  /**
   * Moves monotonic time forward without firing any timer, as a process resumed
   * from a pause (SIGSTOP, a long GC pause) finds it: overdue timers fire at the
   * next `advance()`.
   */
  jump(ms: number): void {
    this.monotonic += ms;
  }

  /** Advances in steps of `stepMs` until `predicate()` holds or `maxMs` has passed; returns whether it held. */
  async advanceUntil(predicate: () => boolean, maxMs: number, stepMs = 100): Promise<boolean> {
    for (let spent = 0; spent <= maxMs; spent += stepMs) {
      if (predicate()) return true;
      await this.advance(stepMs);
    }
    return predicate();
  }
}
