import { CorruptRecordError, recordShapeProblem, type JsonValue, type LeaseRecord } from '@rollcall/core';

const BACKEND = 'etcd';

/**
 * A record's value in etcd: the Lease fields and the payload as one JSON
 * object, so `etcdctl get --prefix /rollcall/<cluster>/` shows it as is.
 */
export function encodeRecord(record: LeaseRecord): Buffer {
  const value: Record<string, JsonValue> = {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: record.acquireTime,
    renewTime: record.renewTime,
    leaseTransitions: record.leaseTransitions,
  };
  if (record.payload !== undefined) value.payload = record.payload;
  return Buffer.from(JSON.stringify(value), 'utf8');
}

/** Decodes a stored value; a value that is not a record (edited by hand, another program's key) is a CorruptRecordError. */
export function decodeRecord(key: string, value: Buffer): LeaseRecord | CorruptRecordError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(value));
  } catch (err) {
    return new CorruptRecordError(key, `${key} holds ${value.length} bytes that are not UTF-8 JSON`, { backend: BACKEND, cause: err });
  }
  const problem = recordShapeProblem(parsed);
  if (problem) return new CorruptRecordError(key, `${key} is not a Rollcall record: ${problem}`, { backend: BACKEND });
  const r = parsed as Record<string, unknown>;
  const record: LeaseRecord = {
    holderIdentity: r.holderIdentity as string,
    leaseDurationSeconds: r.leaseDurationSeconds as number,
    acquireTime: (r.acquireTime as string | null | undefined) ?? null,
    renewTime: (r.renewTime as string | null | undefined) ?? null,
    leaseTransitions: r.leaseTransitions as number,
  };
  if (r.payload !== undefined) record.payload = r.payload as JsonValue;
  return record;
}
