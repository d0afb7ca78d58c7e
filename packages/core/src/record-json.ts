import { CorruptRecordError } from './errors.js';
import { parseCreatedAs, parseRecordLiveness, recordShapeProblem, type JsonValue, type LeaseRecord } from './lease-record.js';

/**
 * The JSON form of a record, for backends that store a record as one value
 * (etcd, ZooKeeper, SQL): the Lease fields in a fixed order, then the payload,
 * so a value read by hand (etcdctl, zkCli, SELECT) is readable.
 */
export function recordToJson(record: LeaseRecord): string {
  const value: Record<string, JsonValue> = {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: record.acquireTime,
    renewTime: record.renewTime,
    leaseTransitions: record.leaseTransitions,
  };
  if (record.payload !== undefined) value.payload = record.payload;
  if (record.liveness !== undefined) value.liveness = { ...record.liveness };
  if (record.createdAs !== undefined) value.createdAs = record.createdAs;
  if (record.withdrawn === true) value.withdrawn = true;
  return JSON.stringify(value);
}

/**
 * Decodes a value written by `recordToJson`. Never throws: a value that is not
 * UTF-8 JSON of the record's shape (edited by hand, another program's key) comes
 * back as a CorruptRecordError saying why. `subject` names the value in the
 * message (default: the key).
 */
export function recordFromJson(key: string, value: string | Uint8Array, backend: string, subject: string = key): LeaseRecord | CorruptRecordError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof value === 'string' ? value : new TextDecoder('utf-8', { fatal: true }).decode(value));
  } catch (err) {
    return new CorruptRecordError(key, `${subject} holds a value that is not UTF-8 JSON`, { backend, cause: err });
  }
  const problem = recordShapeProblem(parsed);
  if (problem) return new CorruptRecordError(key, `${subject} is not a Rollcall record: ${problem}`, { backend });
  const r = parsed as Record<string, unknown>;
  const record: LeaseRecord = {
    holderIdentity: r.holderIdentity as string,
    leaseDurationSeconds: r.leaseDurationSeconds as number,
    acquireTime: (r.acquireTime as string | null | undefined) ?? null,
    renewTime: (r.renewTime as string | null | undefined) ?? null,
    leaseTransitions: r.leaseTransitions as number,
  };
  if (r.payload !== undefined) record.payload = r.payload as JsonValue;
  const liveness = parseRecordLiveness(r.liveness);
  if (liveness) record.liveness = liveness;
  // Another store's creation, as migrate tags it; anything else is no creation and is read as absent.
  const createdAs = parseCreatedAs(r.createdAs);
  if (createdAs) record.createdAs = createdAs;
  // Only `true` is the mark; any other value is none.
  if (r.withdrawn === true) record.withdrawn = true;
  return record;
}
