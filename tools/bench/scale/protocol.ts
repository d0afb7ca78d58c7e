/**
 * What the scale benchmark's coordinator and its worker OS processes say to
 * each other, inside the child-process harness's envelope (requests answered
 * by a reply, events as they happen). Times are CLOCK_MONOTONIC
 * milliseconds (`monotonicMs`), one timeline for every process on the host.
 */
import type { BenchMember } from './args.js';
import type { BackendConfig } from '../target.js';

/** Role of a member that watches the workers. */
export const MASTER_ROLE = 'master';
/** Role of the members that announce and heartbeat. */
export const WORKER_ROLE = 'worker';

/** One simulated process: a registry with its own store, announced as one member. */
export interface SimProcess {
  /** Its identity and member id. */
  id: string;
  role: typeof MASTER_ROLE | typeof WORKER_ROLE;
  /** Elections it campaigns in from the start. */
  campaigns: string[];
  /** False for a candidate of the elections-only baseline: it announces no member and watches nothing. Default true. */
  member?: boolean;
  /** `registry.member.liveness=pod`: the uid of its kwok pod (`registry.kubernetes.podUid`). */
  podUid?: string;
}

/** Watch events a worker's stores were delivered, by type, since it started. */
export interface WatchCounts {
  put: number;
  delete: number;
  corrupt: number;
  /** Bookmarks: no change, only a revision. Not counted as events delivered. */
  progress: number;
}

export interface WorkerStatus {
  /** Simulated processes whose registry is open and member announced. */
  opened: number;
  /** Of those, the workers (that the masters should see). */
  openedWorkers: number;
  /** Simulated processes that could not open, with the first few reasons. */
  failed: number;
  errors: string[];
  /** How long each open took, from creating its store to its member announced, ms. */
  openMs: number[];
  /** For each master hosted here: the workers it sees now. */
  seen: Record<string, number>;
  /** Watch events delivered to the masters hosted here, and to the workers. */
  watch: Record<SimProcess['role'], WatchCounts>;
}

export type Request =
  | { op: 'open'; backend: BackendConfig; cluster: string; member: BenchMember; processes: SimProcess[]; concurrency: number }
  /** With `gc`, collects garbage first, so the RSS read next is of live memory. */
  | { op: 'status'; gc?: boolean }
  | { op: 'announce'; process: string; member: string }
  | { op: 'withdraw'; process: string; member: string }
  | { op: 'resign'; process: string; election: string }
  | { op: 'campaign'; process: string; election: string }
  | { op: 'close' };

/** Worker → coordinator, as it happens. */
export type WorkerEvent =
  /** A master saw a tracked worker (an announce probe, a crashed process's member) come or go. */
  | { kind: 'seen'; watcher: string; member: string; type: 'added' | 'removed'; at: number }
  /** A candidate became leader or stopped being one. */
  | { kind: 'leader'; process: string; election: string; type: 'elected' | 'lost'; at: number };

/** Member ids the masters report one by one; every other worker only counts. */
export const TRACKED_MEMBER = /^(probe|crash)-/;
