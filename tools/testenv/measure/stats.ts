/** Latency samples as the table shows them, milliseconds. */
export interface Summary {
  /** Number of samples. */
  n: number;
  p50: number;
  p99: number;
  max: number;
}

/**
 * The `p`-th percentile of `samples` by the nearest-rank method (the smallest
 * sample with at least p% of the samples at or below it), for 0 < p <= 100.
 * With fewer than 100 samples, p99 is the maximum.
 */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new Error('percentile of no samples');
  if (!(p > 0 && p <= 100)) throw new Error(`percentile ${p} is not in (0, 100]`);
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.ceil((p / 100) * sorted.length) - 1]!;
}

export function summarize(samples: readonly number[]): Summary {
  return { n: samples.length, p50: percentile(samples, 50), p99: percentile(samples, 99), max: percentile(samples, 100) };
}
