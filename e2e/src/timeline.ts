import type { IncarnationRecord, StampedEvent } from './candidate-handle.js';
import type { ResourceWrite } from './fenced-resource.js';
import type { FaultRecord } from './faults.js';
import type { Fenced } from './protocol.js';

/** Everything one soak run recorded, on one CLOCK_MONOTONIC timeline. */
export interface Timeline {
  /** The candidates' names: the only member ids that exist. */
  names: readonly string[];
  incarnations: readonly IncarnationRecord[];
  /** Every write the fenced resource decided. */
  writes: readonly ResourceWrite[];
  faults: readonly FaultRecord[];
  /** Whether the backend's watch tells of every change (see SoakBackend): then an update that resolved must have been seen. */
  watchSeesEveryChange: boolean;
  /** Renew deadlines the candidates ran with, milliseconds. */
  renewDeadlineMs: Readonly<Record<Fenced, number>>;
  startedAt: number;
  endedAt: number;
  /**
   * In pod liveness: each candidate pod's Ready condition as the coordinator's
   * pod watch saw it change, by candidate name (its pod's name), from the first
   * state seen. Undefined when the candidates heartbeat.
   */
  podReadiness?: Readonly<Record<string, readonly { ready: boolean; at: number }[]>>;
}

/** A span of CLOCK_MONOTONIC time, milliseconds. */
export interface Window {
  from: number;
  to: number;
}

/** One term of the election or one hold of the lock, as its holder lived it. */
export interface Term {
  of: Fenced;
  holder: IncarnationRecord;
  token: number;
  /** The `elected` (or `lockAcquired`) event. */
  from: number;
  /**
   * The first of: its `lost` (`lockLost`) event, the first sample at which the
   * holder read its token as gone, its SIGKILL, its exit, the end of the run.
   */
  to: number;
}

export const describeHolder = (r: Pick<IncarnationRecord, 'name' | 'incarnation'>) => `${r.name}#${r.incarnation}`;

/** The terms (holds) of one process, from its events. */
export function termsOf(record: IncarnationRecord, of: Fenced, endOfRun: number): Term[] {
  const [began, ended] = of === 'election' ? (['elected', 'lost'] as const) : (['lockAcquired', 'lockLost'] as const);
  const events = record.events.filter((e) => e.type === began || e.type === ended || (e.type === 'belief' && e.of === of)).sort((a, b) => a.t - b.t || a.n - b.n);
  const terms: Term[] = [];
  let open: Term | undefined;
  const close = (at: number) => {
    if (open) terms.push({ ...open, to: at });
    open = undefined;
  };
  for (const e of events) {
    // An invalid announcement (stale when it arrived) opens no term; figures count it.
    if (e.type === began && e.valid === false) continue;
    if (e.type === began) {
      close(e.t);
      open = { of, holder: record, token: e.token, from: e.t, to: Infinity };
    } else if (e.type === ended && open?.token === e.token) close(e.t);
    else if (e.type === 'belief' && open && e.token !== open.token && e.t >= open.from) close(e.t);
  }
  close(Math.min(record.killedAt ?? Infinity, record.exitedAt ?? Infinity, endOfRun));
  return terms;
}

/**
 * When a process could not act: each SIGSTOP until its first event after the
 * SIGCONT (the contract's allowance for a paused process), and each stall it
 * reported (a gap in its sampling: it did not run, whatever the cause).
 * Shared by the soak's verdict and the failover chaos's.
 */
export function blindWindows<E extends StampedEvent>(record: IncarnationRecord<E>, endOfRun: number): Window[] {
  // Any process of the timeline reports a stall as `{ type: 'stall', from, t }`.
  const windows: Window[] = record.events.flatMap((e) => (e.type === 'stall' ? [{ from: (e as unknown as { from: number }).from, to: e.t }] : []));
  const gone = Math.min(record.killedAt ?? Infinity, record.exitedAt ?? Infinity, endOfRun);
  for (const pause of record.pauses) {
    const resumed = pause.to;
    const firstAfter = resumed === undefined ? undefined : record.events.filter((e) => e.t > resumed).reduce((min, e) => Math.min(min, e.t), Infinity);
    windows.push({ from: pause.from, to: Math.min(firstAfter ?? gone, gone) });
  }
  return windows;
}

/** How much of `span` none of `windows` covers, milliseconds. */
export function uncovered(span: Window, windows: readonly Window[]): number {
  const clipped = windows
    .map((w) => ({ from: Math.max(w.from, span.from), to: Math.min(w.to, span.to) }))
    .filter((w) => w.to > w.from)
    .sort((a, b) => a.from - b.from);
  let covered = 0;
  let reach = span.from;
  for (const w of clipped) {
    if (w.to <= reach) continue;
    covered += w.to - Math.max(w.from, reach);
    reach = w.to;
  }
  return span.to - span.from - covered;
}
