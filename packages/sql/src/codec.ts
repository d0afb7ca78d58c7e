import { CorruptRecordError, recordShapeProblem, type CorruptEntry, type JsonValue, type LeaseRecord, type StoredRecord } from '@rollcall/core';

/** A record's stored form: its JSON, fields in a fixed order so rows are readable by hand. */
export function encodeRecord(record: LeaseRecord): string {
  const stored: Record<string, unknown> = {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: record.acquireTime,
    renewTime: record.renewTime,
    leaseTransitions: record.leaseTransitions,
  };
  if (record.payload !== undefined) stored.payload = record.payload;
  return JSON.stringify(stored);
}

/** A decoded row: the record, or the reason it cannot be used (a row edited by hand into garbage). */
export type Decoded = { ok: true; stored: StoredRecord } | { ok: false; corrupt: CorruptEntry };

/** Decodes a row's value; never throws, whatever is in the row. */
export function decodeRecord(backend: string, key: string, version: string, value: unknown): Decoded {
  const fail = (why: string, cause?: unknown): Decoded => ({
    ok: false,
    corrupt: { key, version, error: new CorruptRecordError(key, `${key} (version ${version}) cannot be decoded: ${why}`, { backend, cause }) },
  });
  const text = typeof value === 'string' ? value : Buffer.isBuffer(value) ? value.toString('utf8') : undefined;
  if (text === undefined) return fail(value === null ? 'the value is NULL' : `the value is a ${typeof value}, not text`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return fail('the value is not JSON', err);
  }
  const problem = recordShapeProblem(parsed);
  if (problem) return fail(problem);
  const r = parsed as Record<string, unknown>;
  const record: LeaseRecord = {
    holderIdentity: r.holderIdentity as string,
    leaseDurationSeconds: r.leaseDurationSeconds as number,
    acquireTime: (r.acquireTime as string | null | undefined) ?? null,
    renewTime: (r.renewTime as string | null | undefined) ?? null,
    leaseTransitions: r.leaseTransitions as number,
  };
  if (r.payload !== undefined) record.payload = r.payload as JsonValue;
  return { ok: true, stored: { key, version, record } };
}
