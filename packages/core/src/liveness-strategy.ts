import type { Clock } from './clock.js';
import type { LeaseHolder } from './lease-holder.js';
import type { RecordLiveness } from './lease-record.js';
import type { Logger } from './logger.js';
import type { MemberConfig, MemberLiveness } from './member-liveness.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, RecordStore } from './store.js';
import type { CacheEntry, WatchCache } from './watch-cache.js';

/**
 * What a liveness mode may use, given once when the registry opens. A mode
 * that needs no heartbeats (the pod mode: a member is alive while its pod is
 * Ready) learns readiness through `backend` — the backend's own store, where a
 * native primitive lives — and tells readers through `rejudge`.
 * @internal
 */
export interface LivenessContext {
  /** The registry's identity. */
  identity: string;
  /** `registry.member`: timings and the mode. */
  member: MemberConfig;
  /** `registry.readOnly`: the mode judges liveness but writes nothing and campaigns for nothing. */
  readOnly: boolean;
  cache: WatchCache;
  /** The store every algorithm writes through (timeouts, connection state). */
  store: MonitoredStore;
  /** The backend's own store, as its plugin made it. */
  backend: RecordStore;
  clock: Clock;
  logger: Logger;
  /** A holder of an election's lease, for the caller to start: the registry's, so a lost connection and close() reach it. */
  holder(key: RecordKey): LeaseHolder;
  /** Asks every reader of this process to judge a member record again through {@link LivenessStrategy.vouches}: its liveness changed without its record changing. */
  rejudge(key: RecordKey): void;
}

/** How an announced member shows it is alive. @internal */
export interface MemberKeeping {
  /** The record its heartbeats renew when that is not its member record; undefined when each heartbeat rewrites the member record. */
  heartbeatKey: RecordKey | undefined;
  /** False when something else vouches for it: its member record is written on announce, payload change and withdraw only. */
  heartbeats: boolean;
  /** What its member record says of its liveness, so a reader of any mode judges it by that. */
  liveness: RecordLiveness;
  /** Checked before the member record is first written; rejects (INVALID_CONFIG) when the member could not be kept alive this way. */
  prepare?(): Promise<void>;
}

/**
 * One way member liveness reaches peers (`registry.member.liveness`), chosen
 * once when the registry opens: a new mode is a new strategy in
 * `liveness-modes.ts`, not a branch in the registry.
 * @internal
 */
export interface LivenessStrategy {
  readonly mode: MemberLiveness;
  /** How the member `role`/`id` this process announces keeps alive. */
  keeping(role: string, id: string): MemberKeeping;
  /**
   * True when every reader judges this member record's lease itself
   * (`judgeExpiry`) and an expired one is marked and deleted by the one whose
   * mark lands; false when something else removes it (the reaper) or vouches
   * for it (a pod's readiness) and readers trust the record present. Asked
   * per record: a record says which liveness applies to it
   * ({@link RecordLiveness}), and a pod-mode record is never a reader's to expire.
   */
  readersExpire(entry: CacheEntry): boolean;
  /** Whether this strategy vouches for a member record as alive now (default: yes); the directory asks on every change and on `rejudge`. */
  vouches?(entry: CacheEntry): boolean;
  /** When the member `role`/`id` last showed it is alive, when that is not its member record's renewTime (the reaper mode's heartbeat record, when this process reads it). */
  lastHeartbeat?(role: string, id: string): Date | undefined;
  /** Resolves once what the strategy itself reads of `role` (since `reading`) is listed, so a first `members()` shows it. */
  ready?(role: string): Promise<void>;
  /** This process reads `role` and it has a member. Called for every member added; idempotent. */
  reading(role: string): void;
  close(): void;
}

/** Makes a mode's strategy. @internal */
export type LivenessFactory = (context: LivenessContext) => LivenessStrategy;
