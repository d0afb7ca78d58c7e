/** Any value JSON can carry: the shape of a record's payload. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * The one record shape behind every leader, lock and member: the fields and
 * meanings of a Kubernetes `coordination.k8s.io/v1` LeaseSpec, plus a payload.
 */
export interface LeaseRecord {
  /** Who holds the lease; the empty string means free. */
  holderIdentity: string;
  /** How long, in whole seconds, an observer waits after last seeing the record change before it may treat it as expired. */
  leaseDurationSeconds: number;
  /** When the current holder acquired it, as a MicroTime (RFC 3339 with six fractional digits); null when never held. */
  acquireTime: string | null;
  /** When the holder last renewed, as a MicroTime; changes on every renew. */
  renewTime: string | null;
  /** How many times the lease changed hands; Rollcall's fencing token. */
  leaseTransitions: number;
  /** Application data: a member's heartbeat payload; absent on leader and lock records. */
  payload?: JsonValue;
  /**
   * A member record's liveness (see {@link RecordLiveness}): how its member
   * shows it is alive, so a reader of any mode judges it by that. Absent on
   * leader and lock records and on member records written before it existed
   * (read as the reader's own heartbeat or reaper mode).
   */
  liveness?: RecordLiveness;
  /**
   * The creation (see `StoredRecord.created`) this record continues from
   * another store: written by `@rollcall/migrate` on the `to` side's copy of a
   * record it created on `from` first (`from:<created>`), so every reader names
   * one life of the record the same, whichever side it sees first. Absent
   * elsewhere. Stores keep it as they keep the payload.
   */
  createdAs?: string;
  /**
   * The withdraw mark: set (to `true`) on a member record by its own member,
   * by compare-and-set, as the last write before it deletes the record in a
   * graceful withdraw, the rest of the record kept. A reader that sees it
   * knows the member left on purpose (`registry.failover` skips it by
   * default); a delete it did not see marked is one it cannot explain, and a
   * failover runs it. Absent elsewhere (and on records of releases before it).
   * Stores keep it as they keep the payload.
   */
  withdrawn?: true;
}

/**
 * How a member record's member shows it is alive: `heartbeat` (it rewrites the
 * record), `reaper` (it renews `heartbeat/<role>/<id>`), or `pod` (it is alive
 * while the pod `podUid` exists and is Ready; the record is written on
 * announce, payload change and withdraw only).
 */
export type RecordLiveness = { mode: 'heartbeat' | 'reaper' } | { mode: 'pod'; podUid: string };

/** Reads a record's liveness from its stored form; undefined (read as the reader's mode) when absent or of a kind this version does not know. */
export function parseRecordLiveness(value: unknown): RecordLiveness | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (v.mode === 'heartbeat' || v.mode === 'reaper') return { mode: v.mode };
  if (v.mode === 'pod' && typeof v.podUid === 'string' && v.podUid !== '') return { mode: 'pod', podUid: v.podUid };
  return undefined;
}

/** Reads a record's `createdAs` (`from:<id>` or `to:<id>`, printable ASCII, at most 200 characters after the prefix); undefined when absent or malformed. */
export function parseCreatedAs(value: unknown): string | undefined {
  return typeof value === 'string' && /^(from|to):[\x21-\x7e]{1,200}$/.test(value) ? value : undefined;
}

/**
 * The holder a store shows when a record is held but it cannot say by whom: a
 * store made of two (`@rollcall/migrate`) whose sides name different holders.
 * Never free, never this process, so the lease algorithm waits until the record
 * has not changed for a lease (client-go's MultiLock `UnknownLeader`); observers
 * see no leader. The slash makes it no valid identity.
 */
export const UNKNOWN_HOLDER = 'rollcall.migrate/unknown';

/** Formats `date` as a Kubernetes MicroTime: `2026-01-02T03:04:05.678000Z`. */
export function formatMicroTime(date: Date): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Parses a MicroTime or RFC 3339 timestamp; undefined when absent or invalid. */
export function parseTime(value: string | null | undefined): Date | undefined {
  if (!value) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

/** Serialized payload size in bytes (UTF-8 JSON), as stores count it. */
export function payloadBytes(payload: JsonValue | undefined): number {
  return payload === undefined ? 0 : Buffer.byteLength(JSON.stringify(payload), 'utf8');
}

/**
 * The longest lease a record may declare, seconds (one hour). A record read
 * with more is corrupt, whoever wrote it: one write of a huge lease would pin
 * a leadership, a lock or a member for as long, and a configuration cannot ask
 * for more (the duration keys stop at 3,600,000 ms).
 */
export const MAX_LEASE_DURATION_SECONDS = 3600;

/** Checks a decoded value has the record's shape; returns a reason when it does not. */
export function recordShapeProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not an object';
  const r = value as Record<string, unknown>;
  if (typeof r.holderIdentity !== 'string') return 'holderIdentity is not a string';
  if (!Number.isInteger(r.leaseDurationSeconds) || (r.leaseDurationSeconds as number) < 0) return 'leaseDurationSeconds is not a non-negative integer';
  if ((r.leaseDurationSeconds as number) > MAX_LEASE_DURATION_SECONDS) return `leaseDurationSeconds ${r.leaseDurationSeconds as number} is above the ceiling of ${MAX_LEASE_DURATION_SECONDS} (one hour)`;
  // Past 2^53 a token no longer grows by one (2^53 + 1 reads as 2^53): fencing by it would fail open.
  if (!Number.isSafeInteger(r.leaseTransitions) || (r.leaseTransitions as number) < 0) return 'leaseTransitions is not a non-negative integer up to 2^53 - 1';
  for (const field of ['acquireTime', 'renewTime'] as const) {
    if (r[field] !== null && r[field] !== undefined && typeof r[field] !== 'string') return `${field} is not a timestamp`;
  }
  return undefined;
}
