import { CorruptRecordError } from '@rollcall/core';
import { type CorruptEntry, type LeaseRecord, recordFromJson, recordToJson, type StoredRecord } from '@rollcall/core/spi';

/** A record's stored form: core's record JSON, fields in a fixed order so rows are readable by hand. */
export function encodeRecord(record: LeaseRecord): string {
  return recordToJson(record);
}

/** A decoded row: the record, or the reason it cannot be used (a row edited by hand into garbage). */
export type Decoded = { ok: true; stored: StoredRecord } | { ok: false; corrupt: CorruptEntry };

/**
 * Decodes a row's value (text, or bytes from a driver); never throws, whatever is in the row.
 * `created`: the row's `created_revision` (see {@link createdOf}), null for a row of an earlier release.
 */
export function decodeRecord(backend: string, key: string, version: string, value: unknown, created: string | null): Decoded {
  const fail = (why: string, cause?: unknown): Decoded => ({
    ok: false,
    corrupt: { key, version, ...(created === null ? {} : { created }), error: new CorruptRecordError(key, `${key} (version ${version}) cannot be decoded: ${why}`, { backend, cause }) },
  });
  if (typeof value !== 'string' && !(value instanceof Uint8Array)) return fail(value === null ? 'the value is NULL' : `the value is a ${typeof value}, not text`);
  const decoded = recordFromJson(key, value, backend, `${key} (version ${version})`);
  if (decoded instanceof CorruptRecordError) return { ok: false, corrupt: { key, version, ...(created === null ? {} : { created }), error: decoded } };
  return { ok: true, stored: { key, version, record: decoded, created: created ?? legacyCreated(decoded, version) } };
}

/**
 * A row's `created_revision`, the revision of the insert that began its life,
 * as a decimal string; null for a row an earlier release wrote (the column
 * NULL), whose creation {@link legacyCreated} reads from its record.
 */
export function createdOf(row: { created_revision?: unknown }): string | null {
  const created = row.created_revision;
  return created === null || created === undefined ? null : String(toInt(created));
}

/** What a legacy acquireTime may be to name a creation: a timestamp's characters, nothing a key segment cannot hold. */
const LEGACY_ACQUIRE_TIME = /^[0-9A-Za-z:.+-]{1,40}$/;

/**
 * The creation of a row an earlier release wrote (no `created_revision`):
 * `legacy:<acquireTime>`. Its version changes on every heartbeat, but its
 * process keeps its `acquireTime` across heartbeats and re-creates and a
 * marker keeps it too, so one old process is one incarnation; its restart is
 * a new one. Unique within the key, not across keys, and not ordered (see the
 * SQL README's "Creation order"). A record without one (a free lease, never
 * a member) reads as created at its version, as before.
 */
export function legacyCreated(record: LeaseRecord, version: string): string {
  const acquired = record.acquireTime;
  return typeof acquired === 'string' && LEGACY_ACQUIRE_TIME.test(acquired) ? `legacy:${acquired}` : version;
}

/** An integer column as a number (drivers hand BIGINTs back as numbers, bigints or strings). */
export function toInt(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return Number(value);
  return Number.NaN;
}
