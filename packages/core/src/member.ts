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
}

/** A change in a role's membership. */
export type MemberEvent =
  | { type: 'added'; member: Member }
  /** The payload changed. Heartbeats that carry the same payload are not events. */
  | { type: 'updated'; member: Member; previous: Member }
  /** Gone: `member` is its last known data. `reason` is `deleted` (withdrawn, or removed by anyone) or `expired` (no heartbeat seen for its lease duration). */
  | { type: 'removed'; member: Member; reason: 'deleted' | 'expired' | 'corrupt' };

export type MemberListener = (event: MemberEvent) => void;
