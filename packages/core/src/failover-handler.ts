import type { FailoverReason } from './failover-record.js';
import type { JsonValue } from './lease-record.js';

/** A member incarnation that is gone, as a failover handler receives it. */
export interface DeadIncarnation {
  role: string;
  id: string;
  /** The incarnation: its member record's creation (`StoredRecord.created`), unique across the cluster's history. */
  incarnation: string;
  /**
   * Its last payload the claiming leader saw: the one its removal carried; when a
   * leader died before claiming it, the payload it had when a leader first saw it.
   */
  lastPayload: JsonValue | undefined;
  reason: FailoverReason;
}

/** What a handler runs under. */
export interface FailoverRun {
  /** The leader's fencing token: stamp every effect with it, so a resource refuses a deposed leader. */
  fencingToken: number;
  /** Aborts when this term ends (leadership lost, resigned, `close()`): stop, and do not resolve as if done. */
  signal: AbortSignal;
  /** An earlier term claimed this incarnation and did not acknowledge it: its effects may be partly done. */
  resumed: boolean;
  /** 1 for the first run in this term, then one more per retry after a rejection. */
  attempt: number;
}

/**
 * Fails one dead incarnation over. Resolving acknowledges it: it is never run
 * again. Rejecting retries it with backoff, in this term or the next. It may run
 * again after resolving if the leader died before its acknowledgement landed
 * (then with `resumed`), so it must be idempotent per incarnation.
 */
export type FailoverHandler = (dead: DeadIncarnation, run: FailoverRun) => Promise<void>;

/** What a failover emits. */
export interface FailoverEvents {
  /** A handler started (`resumed`: an earlier term claimed it). */
  started: DeadIncarnation & { fencingToken: number; resumed: boolean; attempt: number };
  /** A handler resolved and its acknowledgement landed: never run again. */
  acknowledged: DeadIncarnation & { fencingToken: number };
  /** A graceful withdraw recorded `skipped` (without `includeWithdrawn`). */
  skipped: DeadIncarnation & { fencingToken: number };
  /** A handler rejected; it runs again after `retryInMs`. */
  failed: DeadIncarnation & { fencingToken: number; error: unknown; attempt: number; retryInMs: number };
  /** `pending` (claimed, not acknowledged) changed: on a claim, an ack, and 0 when the term ends. */
  pending: { role: string; pending: number };
}
