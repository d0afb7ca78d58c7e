import { CorruptRecordError } from '@rollcall/core';
import { type LeaseRecord, type RecordKey, recordShapeProblem } from '@rollcall/core/spi';
import { BACKEND } from './errors.js';

/**
 * A record's znode holds `{"rollcall":1,"record":{...}}`, UTF-8 JSON: the
 * marker tells a Rollcall record from anything else written under the root.
 */
const FORMAT = 1;

export function encodeRecord(record: LeaseRecord): Buffer {
  const { holderIdentity, leaseDurationSeconds, acquireTime, renewTime, leaseTransitions, payload } = record;
  const body: LeaseRecord = { holderIdentity, leaseDurationSeconds, acquireTime, renewTime, leaseTransitions };
  if (payload !== undefined) body.payload = payload;
  if (record.withdrawn === true) body.withdrawn = true;
  return Buffer.from(JSON.stringify({ rollcall: FORMAT, record: body }), 'utf8');
}

/** Decodes a znode's data; a CorruptRecordError (never a throw) when it is not a Rollcall record. */
export function decodeRecord(key: RecordKey, data: Buffer | null | undefined): LeaseRecord | CorruptRecordError {
  const corrupt = (why: string) => new CorruptRecordError(key, `${key}: the znode does not hold a Rollcall record: ${why}`, { backend: BACKEND });
  if (!data || data.length === 0) return corrupt('it is empty');
  let value: unknown;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch {
    return corrupt('it is not JSON');
  }
  if (typeof value !== 'object' || value === null || (value as { rollcall?: unknown }).rollcall !== FORMAT) return corrupt(`no "rollcall":${FORMAT} marker`);
  const record = (value as { record?: unknown }).record;
  const problem = recordShapeProblem(record);
  if (problem) return corrupt(problem);
  const r = record as LeaseRecord;
  const out: LeaseRecord = {
    holderIdentity: r.holderIdentity,
    leaseDurationSeconds: r.leaseDurationSeconds,
    acquireTime: r.acquireTime ?? null,
    renewTime: r.renewTime ?? null,
    leaseTransitions: r.leaseTransitions,
  };
  if (r.payload !== undefined) out.payload = r.payload;
  // The withdraw mark is `true` or nothing.
  if (r.withdrawn === true) out.withdrawn = true;
  return out;
}

/**
 * Record keys have slashes (`member/<role>/<id>`); each record is one child of
 * the cluster znode, its name the key percent-encoded (`member%2Fworker%2Fw1`),
 * so one child watch covers the whole cluster and a create needs no parents.
 * Every byte outside `A-Za-z0-9._:@-` is encoded, so a name is always a valid,
 * reversible znode name.
 */
export function encodeKey(key: RecordKey): string {
  let out = '';
  for (const byte of Buffer.from(key, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9._:@-]/.test(c) && byte < 0x80 ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The key of a child name, or undefined for a name this encoding never produces (a znode made by hand). */
export function decodeKey(name: string): RecordKey | undefined {
  if (!/^(?:[A-Za-z0-9._:@-]|%[0-9A-F]{2})+$/.test(name)) return undefined;
  let key: string;
  try {
    key = decodeURIComponent(name);
  } catch {
    return undefined;
  }
  return encodeKey(key) === name ? key : undefined;
}
