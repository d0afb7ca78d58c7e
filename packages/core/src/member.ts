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
}

/** A change in a role's membership. */
export type MemberEvent =
  | { type: 'added'; member: Member }
  /** The payload changed. Heartbeats that carry the same payload are not events. */
  | { type: 'updated'; member: Member; previous: Member }
  /** Gone: `member` is its last known data. `reason` is `deleted` (withdrawn, or removed by anyone) or `expired` (no heartbeat seen for its lease duration). */
  | { type: 'removed'; member: Member; reason: 'deleted' | 'expired' | 'corrupt' };

export type MemberListener = (event: MemberEvent) => void;
