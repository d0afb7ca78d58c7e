import type { JsonValue } from './lease-record.js';

/** A member as peers see it. */
export interface Member {
  /** The role it announced under, e.g. `worker`. */
  role: string;
  /** Its id, unique within the role. */
  id: string;
  /** Its last heartbeat payload. */
  payload: JsonValue | undefined;
  /** When it announced (its wall clock). */
  acquireTime: Date | undefined;
  /** When it last heartbeat (its wall clock). */
  renewTime: Date | undefined;
  /** Its lease: how long after `renewTime` (by its own clock) peers count it gone without a heartbeat. Milliseconds. */
  leaseDurationMs: number;
  /**
   * How this reader judges it, when not by its lease: `pod`, present while its
   * pod is Ready (its `renewTime` is its last write, not a heartbeat);
   * `unverified`, a pod member whose pod's readiness this reader cannot read
   * (no permission, or a backend without pod readiness), shown while its record
   * exists — on Kubernetes until its pod is deleted, so a member whose container
   * died stays listed until then. Absent for a member judged by its lease.
   */
  judgedBy?: 'pod' | 'unverified';
  /**
   * Which announce of this id it is: its record's creation
   * (`StoredRecord.created`), so a new one on every announce and every
   * re-announce after its record was gone, unique across the cluster's history
   * and the same in every event and listing of one life of the record. A
   * decimal integer where the backend orders creates (`supports.orderedCreation`:
   * memory, etcd, ZooKeeper, SQL), a uid on Kubernetes, `from:…`/`to:…` on
   * migrate. Compare it for equality only (or as a bigint where ordered).
   */
  incarnation: string;
}

/** A change in a role's membership. */
export type MemberEvent =
  | { type: 'added'; member: Member }
  /**
   * The payload changed (heartbeats that carry the same payload are not
   * events), within one incarnation: `member` and `previous` have
   * the same `incarnation`. A record of another incarnation under the same key
   * is `removed` (`replaced`) and then `added`, never `updated`.
   */
  | { type: 'updated'; member: Member; previous: Member }
  /**
   * Gone: `member` is its last known data, its `incarnation` the one that
   * ended. `reason`: `deleted` (withdrawn, or removed by anyone), `expired`
   * (no heartbeat seen for its lease duration, or its record marked so by a
   * peer), `corrupt` (its record cannot be decoded), or `replaced` (its
   * record was deleted and created again — a restart, a re-announce — and
   * this reader saw the new incarnation's record before, or instead of, the
   * deletion; an `added` for the new one follows at once).
   */
  | { type: 'removed'; member: Member; reason: MemberRemovalReason };

/** Why a member was removed (see {@link MemberEvent}). */
export type MemberRemovalReason = 'deleted' | 'expired' | 'corrupt' | 'replaced';

export type MemberListener = (event: MemberEvent) => void;
