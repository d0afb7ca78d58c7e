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

/** The longest delay Node's `setTimeout` keeps: above it, it fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The real clock: `performance.now()` and `Date`. Like an open connection,
 * pending timers keep the process alive until `close()`. A delay above
 * 2^31−1 ms (about 24.8 days, which a hostile record's duration can ask for)
 * is waited in steps, never fired early; NaN counts as 0.
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => new Date(),
  setTimeout(fn, delayMs) {
    const due = performance.now() + (Number.isNaN(delayMs) ? 0 : delayMs);
    let handle: ReturnType<typeof setTimeout>;
    const arm = (ms: number) => {
      handle = ms > MAX_TIMER_MS ? setTimeout(() => arm(due - performance.now()), MAX_TIMER_MS) : setTimeout(fn, Math.max(0, ms));
    };
    arm(due - performance.now());
    return { cancel: () => clearTimeout(handle) };
  },
};
