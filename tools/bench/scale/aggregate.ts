import { summarize } from '../../testenv/stats.js';
import type { RequestTotals } from '../scenarios/idle-requests.js';
import type { WatchCounts } from './protocol.js';
import type { Latency, ScaleRow } from './results.js';

/** Requests counted over `seconds`, per second, in all and by method. */
export function requestRates(totals: RequestTotals, seconds: number): { perSecond: number; byMethod?: Record<string, number> } {
  const rate = (n: number) => n / seconds;
  const byMethod = totals.byMethod && Object.fromEntries(Object.entries(totals.byMethod).map(([method, n]) => [method, rate(n)]));
  return { perSecond: rate(totals.total), ...(byMethod ? { byMethod } : {}) };
}

/** Watch events delivered between two readings of each worker process, over `seconds`, in all and per simulated process. */
export function watchRates(before: readonly WatchCounts[], after: readonly WatchCounts[], seconds: number, processes: number): NonNullable<ScaleRow['watch']> {
  let events = 0;
  let bookmarks = 0;
  for (const [i, a] of after.entries()) {
    const b = before[i]!;
    events += a.put - b.put + (a.delete - b.delete) + (a.corrupt - b.corrupt);
    bookmarks += a.progress - b.progress;
  }
  return { eventsPerSecond: events / seconds, perProcessPerSecond: processes > 0 ? events / seconds / processes : 0, bookmarksPerSecond: bookmarks / seconds };
}

/**
 * How long after `from` every one of `watchers` had seen it: the latest of
 * their times, or undefined while one has not.
 */
export function seenByEvery(from: number, times: ReadonlyMap<string, number> | undefined, watchers: readonly string[]): number | undefined {
  let last = -Infinity;
  for (const watcher of watchers) {
    const at = times?.get(watcher);
    if (at === undefined) return undefined;
    last = Math.max(last, at);
  }
  return last - from;
}

export function latency(samples: readonly number[], attempted: number): Latency {
  return samples.length === 0 ? { attempted } : { summary: summarize(samples), attempted };
}
