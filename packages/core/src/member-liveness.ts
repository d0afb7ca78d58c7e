import type { Clock } from './clock.js';
import type { LeaseHolder } from './lease-holder.js';
import type { RecordLiveness } from './lease-record.js';
import type { ConfirmPolicy } from './liveness-judge.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, RecordStore } from './store.js';
import type { MemberTiming } from './timing.js';
import type { CacheEntry, WatchCache } from './watch-cache.js';

/**
 * How a member's liveness reaches its peers (`registry.member.liveness`).
 *
 * - `heartbeat` (default): every heartbeat rewrites the member record, so every
 *   process that reads the role receives each one and judges expiry itself;
 *   of those that see a member expire, the one whose compare-and-set mark on
 *   its record lands deletes it.
 * - `reaper`: the member record `member/<role>/<id>` is written only on
 *   announce, payload change and withdraw; heartbeats renew a separate record
 *   `heartbeat/<role>/<id>` that only one elected reaper per role watches. The
 *   reaper deletes an expired member, and readers see its `removed`.
 * - `pod`: a member in a pod is alive while its pod exists and is Ready; its
 *   record is written on announce, payload change and withdraw only, and
 *   readers follow the readiness of each role's pods with one watch (on
 *   Kubernetes, the EndpointSlices of a Service per role). A member outside a
 *   pod keeps heartbeats as in `heartbeat`. Needs a backend that reports pod
 *   readiness; any other refuses it with INVALID_CONFIG.
 *
 * Every member record says which of these applies to it. A pod member's record
 * is judged by its pod in a reader of any mode.
 */
export type MemberLiveness = 'heartbeat' | 'reaper' | 'pod';

/** Every value `registry.member.liveness` takes. */
export const MEMBER_LIVENESS_MODES: readonly MemberLiveness[] = ['heartbeat', 'reaper', 'pod'];

/**
 * What a member does once it is `lost` (its renew deadline passed, or a
 * heartbeat found its record deleted or written by someone else); its old
 * incarnation never writes again either way.
 *
 * - `reannounce` (default): announces a new incarnation — its old record, if
 *   still there, removed by compare-and-set first, then a new record created,
 *   so peers see `removed` then `added` — and emits `reannounced`; `alive`,
 *   `signal` and `incarnation` then describe the new one. A library does not
 *   end its host by default: work that reads `alive`/`signal`, or is fenced by
 *   the incarnation, has stopped, and the new incarnation is a new member that
 *   peers (a failover) may treat as such.
 * - `exit`: after the `lost` listeners ran, the process exits (code 75), for
 *   work that cannot be interrupted, e.g. child processes; its supervisor
 *   starts it again as a new incarnation.
 */
export type MemberAfterLost = 'reannounce' | 'exit';

/** Every value `registry.member.afterLost` takes. */
export const MEMBER_AFTER_LOST: readonly MemberAfterLost[] = ['reannounce', 'exit'];

/** The `registry.member` section: heartbeat timings, the liveness mode and what a lost member does. */
export interface MemberConfig extends MemberTiming {
  /**
   * A member in a pod (`liveness: pod`) reads its own record every
   * `heartbeatIntervalMs` and is lost this long after the send of the last
   * read that found it — before its node's pods are marked not Ready when the
   * node is cut off from the API server, if below the node controller's
   * `node-monitor-grace-period` less the kubelet's node lease renew interval
   * (50 s − 10 s by default). Validated: below 40000 and above
   * 1.2 × `heartbeatIntervalMs`. A read per member per interval, no write.
   * Milliseconds; 0 (default): off, a pod member has no deadline of its own.
   */
  podRenewDeadlineMs: number;
  /** How liveness reaches peers: `heartbeat`, `reaper` or `pod` (see {@link MemberLiveness}). Default `heartbeat`. */
  liveness: MemberLiveness;
  /** What a member does once lost: `reannounce` or `exit` (see {@link MemberAfterLost}). Default `reannounce`. */
  afterLost: MemberAfterLost;
}

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
  cache: WatchCache;
  /** The store every algorithm writes through (timeouts, connection state). */
  store: MonitoredStore;
  /** The backend's own store, as its plugin made it. */
  backend: RecordStore;
  clock: Clock;
  logger: Logger;
  /** How an expiry this process judged is confirmed: by a mark and delete, or (`registry.readOnly`) by a read. */
  confirm: ConfirmPolicy;
  /**
   * A holder of an election's lease, for the caller to start: the registry's,
   * so a lost connection and close() reach it. Undefined in a registry that
   * writes nothing (`registry.readOnly`): it campaigns for nothing.
   */
  holder: ((key: RecordKey) => LeaseHolder) | undefined;
  /** Asks every reader of this process to judge a member record again ({@link LivenessStrategy.verdict}): its liveness changed without its record changing. */
  rejudge(key: RecordKey): void;
}

/** A record of an announced member besides its member record (the reaper mode's heartbeat record): written without payload. @internal */
export interface OwnRecord {
  /**
   * Creates it while the member is announced (one an earlier incarnation left
   * is removed first), else compare-and-sets the version last written; found
   * gone or written by someone else, the member is lost and it rejects
   * LEASE_LOST: never written again. Resolves with the write's send time (monotonic).
   */
  put(): Promise<number>;
  /** Deletes it (compare-and-set on the version last written). */
  delete(): Promise<void>;
}

/** What a keeper may do with the member it keeps alive: the handle's writes, in order. @internal */
export interface KeptMember {
  readonly role: string;
  readonly id: string;
  readonly key: RecordKey;
  readonly timing: MemberTiming;
  readonly clock: Clock;
  readonly logger: Logger;
  /**
   * Writes the member record with the current payload: created while the
   * member is announced (an earlier incarnation's removed first), else a
   * compare-and-set that loses the member when the record is gone or written
   * by someone else (rejecting LEASE_LOST). Resolves with the write's send time (monotonic).
   */
  writeMember(): Promise<number>;
  /** Withdraws the member record this handle wrote, marked withdrawn then deleted (a failed announce undone: it did no work). */
  deleteMember(): Promise<void>;
  /** A renewal peers judge the member by, sent at `sentAt` (monotonic), succeeded: its renew deadline counts from there. */
  renewed(sentAt: number): void;
  /** The keeper's {@link MemberKeeper.vouchedUntil} moved: the handle judges it again. */
  vouched(): void;
  /** Reads the member record: resolves with the read's send time when it is still this incarnation's; found gone, marked or a successor's, the member is lost and it rejects LEASE_LOST. */
  checkMember(): Promise<number>;
  /** Runs `write` after the write in flight; rejects with CLOSED when the member was withdrawn first, LEASE_LOST when it was lost. */
  enqueue(write: () => Promise<void>): Promise<void>;
  /** Another record of this member's own, under `key`. */
  own(key: RecordKey): OwnRecord;
}

/**
 * Keeps one incarnation of an announced member alive, the way its mode does;
 * the member's handle drives it and branches on nothing. A keeper that
 * renews reports each renewal's send time ({@link KeptMember.renewed}), and
 * the handle judges the incarnation by it on its own clock (`lost` before any
 * peer may report it removed); a write that finds a record gone or taken
 * loses it. A lost incarnation's keeper is stopped and never writes again.
 * @internal
 */
export interface MemberKeeper {
  /** What the member record says of its liveness, so a reader of any mode judges it by that. */
  readonly liveness: RecordLiveness;
  /** The deadline it is judged by, after the send of its last renewal (milliseconds): `member.renewDeadlineMs` for a keeper that renews a record peers judge by lease, `member.podRenewDeadlineMs` for a pod member that checks its record; undefined: none (a pod member that checks nothing). */
  readonly renewDeadlineMs: number | undefined;
  /** A second bound, monotonic ms, read on every judgement: past it the incarnation is lost (`probe-missed`); undefined: none now. A pod member's own readiness probe sets it. */
  vouchedUntil?(): number | undefined;
  /** Writes what announces the member (the member record first) and starts keeping it alive; rejects, leaving nothing announced, when it cannot. */
  start(): Promise<void>;
  /** Shows the member alive now (after a reconnect), after the write in flight. */
  beat(): Promise<void>;
  /** Stops keeping it alive: no more writes of its own. Idempotent. */
  stop(): void;
  /** The member record is deleted (withdraw): deletes what else it wrote. */
  withdrawn(): Promise<void>;
}

/**
 * What a reader makes of a member record now:
 * - `lease`: this process judges its lease by the one rule ({@link LivenessJudge}) and confirms an expiry by its confirm policy;
 * - `present`: something else vouches for it (a reaper removes it; its pod is Ready);
 * - `absent`: nothing vouches for it now: reported `removed`, reason `expired`, until it is vouched for again;
 * - `unverified`: the liveness it declares cannot be judged here (a pod's readiness this identity may not read): present while its record exists, marked so.
 * @internal
 */
export type Verdict = 'lease' | 'present' | 'absent' | 'unverified';

/**
 * One way member liveness reaches peers (`registry.member.liveness`), chosen
 * once when the registry opens: keeping a member alive, and judging the
 * records that are not a pod's (a pod record is judged by its pod, whatever
 * this mode). A new mode is a new strategy in the table of modes
 * (`LIVENESS_MODES`, `liveness-modes.ts`), not a branch in the registry, the
 * handle or the directory.
 * @internal
 */
export interface LivenessStrategy {
  readonly mode: MemberLiveness;
  /** How the member `member` this process announces is kept alive. */
  keep(member: KeptMember): MemberKeeper;
  /** How this process's readers judge a member record that is not a pod member's; asked on every change and on `rejudge`. */
  verdict(entry: CacheEntry): Verdict;
  /** When the member `role`/`id` last showed it is alive, when that is not its member record's renewTime (the reaper mode's heartbeat record, when this process reads it). */
  lastHeartbeat?(role: string, id: string): Date | undefined;
  /** Resolves once what the strategy itself reads of `role` (since `reading`) is listed, so a first `members()` shows it. */
  ready?(role: string): Promise<void>;
  /** This process reads `role` and it has a member. Called for every member added; idempotent. */
  reading(role: string): void;
  close(): void;
}

/**
 * How a reader judges the records of members kept alive another way than its
 * own mode (a cluster switching modes): the `reaper` mode's, by their heartbeat
 * records, in a process that does not reap.
 * @internal
 */
export interface RecordJudging {
  verdict(entry: CacheEntry): Verdict;
  /** Resolves once what it reads of `role` is listed. */
  ready(role: string): Promise<void>;
  /** The member's last heartbeat, where it reads one. */
  lastHeartbeat(role: string, id: string): Date | undefined;
  close(): void;
}

/** Makes a mode's strategy. @internal */
export type LivenessFactory = (context: LivenessContext) => LivenessStrategy;

/** The liveness a member record declares; undefined for one written before records said so. @internal */
export function declaredLiveness(entry: CacheEntry): RecordLiveness['mode'] | undefined {
  return entry.stored?.record.liveness?.mode;
}

/** The pod a member record says its member lives in (`liveness: { mode: 'pod' }`); undefined for any other record. @internal */
export function podUidOf(entry: CacheEntry): string | undefined {
  const liveness = entry.stored?.record.liveness;
  return liveness?.mode === 'pod' ? liveness.podUid : undefined;
}
