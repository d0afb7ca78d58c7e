import type { Summary } from '../../testenv/measure/stats.js';
import type { MemberLiveness } from '@rollcall/core';
import type { BenchMember, BenchMemberTiming } from './args.js';
import { isDefaultTiming, timingLabel, type ScaleBackend, type ScaleOptions } from './args.js';

/** A latency measured some number of times: the summary of those that completed. */
export interface Latency {
  /** Undefined when none completed. */
  summary?: Summary;
  /** How many were started; more than `summary.n` means some timed out. */
  attempted: number;
}

/** Every figure of one backend at one size N. */
export interface ScaleRow {
  backend: ScaleBackend;
  /** The simulated registries' `registry.member.liveness`; absent in results from before the option (heartbeat). */
  liveness?: MemberLiveness;
  /** The simulated members' heartbeat interval and lease, where not core's default (5000 / 20000 ms). */
  memberTiming?: BenchMemberTiming;
  members: number;
  /** Simulated processes open when the window started. */
  opened: number;
  /** The window's length, seconds (longer than --seconds when a crash's removal was still awaited). */
  windowSeconds: number;
  /** Steps that timed out, each saying what it reached; empty when the system kept up. */
  saturated: string[];
  /** The machine's 1-minute load average when the window started and ended (other work shares the cores); absent in results from before it was recorded. */
  load?: { before: number; after: number };
  /** Why the size was not run at all (a smaller one saturated); then the figures are absent. */
  skipped?: string;
  /** Why the harness could not run the size (e.g. a worker process did not start in time); then the figures are absent. */
  failed?: string;
  server?: {
    units: readonly string[];
    /** Average CPU over the window, cores. */
    cores: number;
    /** The same with no simulated process, measured once per backend before its first size, cores. */
    idleCores: number;
    /** RSS at the window's end, bytes. */
    rssBytes: number;
  };
  requests?: {
    source: string;
    perSecond: number;
    /** By verb, RPC or statement kind, per second; absent where the server does not tell them apart. */
    byMethod?: Record<string, number>;
    /**
     * Writes (create, update, patch, delete) to member records and heartbeat Leases per second, the announce
     * probes' own left out: heartbeats, and the removal of crashed members. Kubernetes only (from the audit log).
     */
    memberWritesPerSecond?: number;
    /** {@link memberWritesPerSecond} by verb (a heartbeat is a `patch`; a re-announce after a loss a `create`, after a `delete` of the lost record); absent in results from before it was counted. */
    memberWritesByMethod?: Record<string, number>;
    /** How many member records and heartbeat Leases were written in the window (Kubernetes only); absent in results from before it was counted. */
    memberWriters?: number;
  };
  watch?: {
    /** Events (puts, deletes) delivered to every watch of the simulated processes, per second. */
    eventsPerSecond: number;
    /** The same per simulated process. */
    perProcessPerSecond: number;
    /** Per master (which watches the workers). */
    perMasterPerSecond: number;
    /** Per worker (which reads no other worker). */
    perWorkerPerSecond: number;
    /** Bookmarks (no change), per second in all. */
    bookmarksPerSecond: number;
  };
  /** Cost of a simulated member in the worker OS processes. */
  perMember?: {
    /** CPU, cores (1 = one core busy). */
    cores: number;
    /** RSS above the worker processes' own before any registry opened, bytes. */
    rssBytes: number;
    /** The simulated processes these figures are divided among (those of the worker processes, not the crashed ones). */
    hosted: number;
  };
  /** announce() to the `added` of the last master. */
  announce: Latency;
  /** SIGKILL of a process to the `removed` of each of its members at the last master. */
  crash: Latency;
  /** resign() of a leader to the next candidate's `elected`. */
  handover: Latency;
}

/** What `--json` writes: the run's header and every row, from which the table and the plot are made. */
export interface ScaleResults {
  startedAt: string;
  machine: string;
  loadBefore: string;
  loadAfter: string;
  durationSeconds: number;
  options: Omit<ScaleOptions, 'json'>;
  timing: string;
  rows: ScaleRow[];
}

/** The backend, with the member setting where it is not the default: `kubernetes (reaper, 10000/40000 ms)`; at N = 0 `kubernetes (elections only)`. */
export function seriesName(row: Pick<ScaleRow, 'backend' | 'liveness' | 'memberTiming'> & { members?: number }): string {
  if (row.members === 0) return `${row.backend} (elections only)`;
  const setting = [...(row.liveness && row.liveness !== 'heartbeat' ? [row.liveness] : []), ...(row.memberTiming ? [`${timingLabel(row.memberTiming)} ms`] : [])];
  return setting.length > 0 ? `${row.backend} (${setting.join(', ')})` : row.backend;
}

/** What a row records of the member setting it ran with: the mode, and the timing where not the default. */
export function memberFields(member: BenchMember): Pick<ScaleRow, 'liveness' | 'memberTiming'> {
  const timing = { heartbeatIntervalMs: member.heartbeatIntervalMs, leaseDurationMs: member.leaseDurationMs };
  return { liveness: member.liveness, ...(isDefaultTiming(timing) ? {} : { memberTiming: timing }) };
}
