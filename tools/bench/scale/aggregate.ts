import { DEFAULT_MEMBER_TIMING } from '@rollcall/core';
import { summarize } from '../../testenv/measure/stats.js';
import type { RequestTotals } from '../scenarios/idle-requests.js';
import type { MemberWriteCounts } from './server.js';
import type { SimProcess, WatchCounts } from './protocol.js';
import type { Latency, ScaleRow } from './results.js';

/** Requests counted over `seconds`, per second, in all, by method, and the member writes where counted. */
export function requestRates(totals: RequestTotals & MemberWriteCounts, seconds: number): { perSecond: number; byMethod?: Record<string, number>; memberWritesPerSecond?: number; memberWritesByMethod?: Record<string, number>; memberWriters?: number } {
  const rate = (n: number) => n / seconds;
  const rates = (counts: Record<string, number>) => Object.fromEntries(Object.entries(counts).map(([method, n]) => [method, rate(n)]));
  const byMethod = totals.byMethod && rates(totals.byMethod);
  return { perSecond: rate(totals.total), ...(byMethod ? { byMethod } : {}), ...(totals.memberWrites !== undefined ? { memberWritesPerSecond: rate(totals.memberWrites) } : {}), ...(totals.memberWritesByMethod ? { memberWritesByMethod: rates(totals.memberWritesByMethod) } : {}), ...(totals.memberWriters !== undefined ? { memberWriters: totals.memberWriters } : {}) };
}

/**
 * Member writes per heartbeat: the member writes of a second times the heartbeat interval, over the member records
 * written in the window (over the members open when it began, in results from before that count) — 1.0 when each
 * heartbeat is one write and nothing else writes. A write the server refused (429) and its retry count twice; the
 * window's crashes (their removal deletes, the heartbeats they no longer send) and timed announces move it by about
 * their share of N. Undefined where members send no heartbeat (`pod` mode, N = 0) or the writes were not counted.
 */
export function writesPerHeartbeat(row: Pick<ScaleRow, 'members' | 'opened' | 'liveness' | 'memberTiming' | 'requests'>): number | undefined {
  const writes = row.requests?.memberWritesPerSecond;
  const members = row.requests?.memberWriters ?? row.opened;
  if (writes === undefined || row.members === 0 || members === 0 || row.liveness === 'pod') return undefined;
  const intervalMs = row.memberTiming?.heartbeatIntervalMs ?? DEFAULT_MEMBER_TIMING.heartbeatIntervalMs;
  return (writes * intervalMs) / 1000 / members;
}

type RoleCounts = Record<SimProcess['role'], WatchCounts>;

/**
 * Watch events delivered between two readings of each worker process, over
 * `seconds`: in all, per simulated process, and per master and per worker
 * (`hosted` says how many of each the readings cover).
 */
export function watchRates(before: readonly RoleCounts[], after: readonly RoleCounts[], seconds: number, hosted: Record<SimProcess['role'], number>): NonNullable<ScaleRow['watch']> {
  const events = { master: 0, worker: 0 };
  let bookmarks = 0;
  for (const [i, reading] of after.entries()) {
    for (const role of ['master', 'worker'] as const) {
      const a = reading[role];
      const b = before[i]![role];
      events[role] += a.put - b.put + (a.delete - b.delete) + (a.corrupt - b.corrupt);
      bookmarks += a.progress - b.progress;
    }
  }
  const rate = (n: number, per: number) => (per > 0 ? n / seconds / per : 0);
  return {
    eventsPerSecond: rate(events.master + events.worker, 1),
    perProcessPerSecond: rate(events.master + events.worker, hosted.master + hosted.worker),
    perMasterPerSecond: rate(events.master, hosted.master),
    perWorkerPerSecond: rate(events.worker, hosted.worker),
    bookmarksPerSecond: rate(bookmarks, 1),
  };
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
