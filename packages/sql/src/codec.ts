import { CorruptRecordError } from '@rollcall/core';
import { type CorruptEntry, type LeaseRecord, recordFromJson, recordToJson, type StoredRecord } from '@rollcall/core/spi';

/** A record's stored form: core's record JSON, fields in a fixed order so rows are readable by hand. */
export function encodeRecord(record: LeaseRecord): string {
  return recordToJson(record);
}

/** A decoded row: the record, or the reason it cannot be used (a row edited by hand into garbage). */
export type Decoded = { ok: true; stored: StoredRecord } | { ok: false; corrupt: CorruptEntry };

/** Decodes a row's value (text, or bytes from a driver); never throws, whatever is in the row. */
export function decodeRecord(backend: string, key: string, version: string, value: unknown, created: string): Decoded {
  const fail = (why: string, cause?: unknown): Decoded => ({
    ok: false,
    corrupt: { key, version, created, error: new CorruptRecordError(key, `${key} (version ${version}) cannot be decoded: ${why}`, { backend, cause }) },
  });
  if (typeof value !== 'string' && !(value instanceof Uint8Array)) return fail(value === null ? 'the value is NULL' : `the value is a ${typeof value}, not text`);
  const decoded = recordFromJson(key, value, backend, `${key} (version ${version})`);
  if (decoded instanceof CorruptRecordError) return { ok: false, corrupt: { key, version, created, error: decoded } };
  return { ok: true, stored: { key, version, record: decoded, created } };
}

/**
 * A row's creation: its `created_revision`, the revision of the insert that
 * began its life. A row an older release inserted has none (NULL) until a write
 * of this release pins it to the version it had; it reads meanwhile as that
 * version (see the SQL README's "Creation order").
 */
export function createdOf(row: { created_revision?: unknown; record_version?: unknown }): string {
  const created = row.created_revision;
  return String(toInt(created === null || created === undefined ? row.record_version : created));
}

/** An integer column as a number (drivers hand BIGINTs back as numbers, bigints or strings). */
export function toInt(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return Number(value);
  return Number.NaN;
}
