import type { LeaseTiming, MemberTiming } from '@rollcall/core';

/**
 * Timings the registry suite runs with. The defaults suit an in-process or
 * local backend; a slower backend raises them. Leases are whole seconds in a
 * record, so keep lease durations multiples of 1000 ms.
 */
export interface ConformanceTimings {
  /** Election timings for most cases. Default `{ leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 }`. */
  election: LeaseTiming;
  /** Lock timings for most cases. Default `{ leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 }`. */
  lock: LeaseTiming;
  /** Member heartbeat timings. Default `{ heartbeatIntervalMs: 400, leaseDurationMs: 2000 }`; `renewDeadlineMs` unset is core's default (¾ of the lease). */
  member: Omit<MemberTiming, 'renewDeadlineMs'> & { renewDeadlineMs?: number };
  /**
   * Deliberately slow election and lock timings for the handover cases: a poll
   * could not explain a handover faster than `retryPeriodMs`, so seeing one
   * proves it came through the watch. Default `{ leaseDurationMs: 30000, renewDeadlineMs: 20000, retryPeriodMs: 10000 }`.
   */
  slowLease: LeaseTiming;
  /** Bound on every backend call, passed as `requestTimeoutMs`. Milliseconds. Default 1000. */
  requestTimeoutMs: number;
  /**
   * How long a change may take to reach another client through the watch:
   * the bound of every "promptly" assertion. Must stay well below
   * `slowLease.retryPeriodMs`. Milliseconds. Default 1500.
   */
  watchBoundMs: number;
  /** Allowance for timer and scheduling jitter in lower bounds (e.g. "not before the lease"). Milliseconds. Default 100. */
  toleranceMs: number;
}

export const DEFAULT_CONFORMANCE_TIMINGS: Readonly<ConformanceTimings> = Object.freeze({
  election: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 },
  lock: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 },
  member: { heartbeatIntervalMs: 400, leaseDurationMs: 2000 },
  slowLease: { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 10_000 },
  requestTimeoutMs: 1000,
  watchBoundMs: 1500,
  toleranceMs: 100,
});

/** The defaults with `overrides` applied, one level deep. */
export function resolveTimings(overrides: Partial<ConformanceTimings> = {}): ConformanceTimings {
  const d = DEFAULT_CONFORMANCE_TIMINGS;
  return {
    election: { ...d.election, ...overrides.election },
    lock: { ...d.lock, ...overrides.lock },
    member: { ...d.member, ...overrides.member },
    slowLease: { ...d.slowLease, ...overrides.slowLease },
    requestTimeoutMs: overrides.requestTimeoutMs ?? d.requestTimeoutMs,
    watchBoundMs: overrides.watchBoundMs ?? d.watchBoundMs,
    toleranceMs: overrides.toleranceMs ?? d.toleranceMs,
  };
}
