/** A cancellable timer returned by {@link Clock.setTimeout}. */
export interface Timer {
  cancel(): void;
}

/**
 * Time as the algorithms see it. Expiry and deadlines use `now()`, a monotonic
 * clock that wall-clock jumps cannot move; `wallNow()` only fills record fields
 * such as `renewTime`. Injected so algorithm tests run without sleeping.
 */
export interface Clock {
  /** Monotonic milliseconds since an arbitrary origin. */
  now(): number;
  /** Wall-clock time, for record timestamps only; never used to judge expiry. */
  wallNow(): Date;
  /** Calls `fn` after `delayMs` milliseconds of `now()` time. */
  setTimeout(fn: () => void, delayMs: number): Timer;
}

/** The real clock: `performance.now()` and `Date`. Like an open connection, pending timers keep the process alive until `close()`. */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => new Date(),
  setTimeout(fn, delayMs) {
    const handle = setTimeout(fn, Math.max(0, delayMs));
    return { cancel: () => clearTimeout(handle) };
  },
};
