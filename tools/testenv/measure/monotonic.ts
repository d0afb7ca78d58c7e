/**
 * CLOCK_MONOTONIC in milliseconds (fractional). `process.hrtime.bigint()` reads
 * CLOCK_MONOTONIC on Linux, one clock for every process on the host, so
 * timestamps taken in different candidate processes and in the coordinator lie
 * on one timeline. (`performance.now()` has a per-process origin and would not.)
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
