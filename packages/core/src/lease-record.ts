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

/** Checks a decoded value has the record's shape; returns a reason when it does not. */
export function recordShapeProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not an object';
  const r = value as Record<string, unknown>;
  if (typeof r.holderIdentity !== 'string') return 'holderIdentity is not a string';
  if (!Number.isInteger(r.leaseDurationSeconds) || (r.leaseDurationSeconds as number) < 0) return 'leaseDurationSeconds is not a non-negative integer';
  if (!Number.isInteger(r.leaseTransitions) || (r.leaseTransitions as number) < 0) return 'leaseTransitions is not a non-negative integer';
  for (const field of ['acquireTime', 'renewTime'] as const) {
    if (r[field] !== null && r[field] !== undefined && typeof r[field] !== 'string') return `${field} is not a timestamp`;
  }
  return undefined;
}
