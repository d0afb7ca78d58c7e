import { StoreConflictError } from '@rollcall/core';
import { parseTime, UNKNOWN_HOLDER, type CorruptEntry, type LeaseRecord, type RecordKey, type StoredRecord } from '@rollcall/core/spi';

/** The two sides of a migration. */
export type Side = 'from' | 'to';

/** What one side holds under a key: a record, or a value it cannot decode. */
export type SideValue = StoredRecord | CorruptEntry;

/** What the migrating view shows under a key. */
export type MergedValue = { stored: StoredRecord; corrupt?: undefined } | { stored?: undefined; corrupt: CorruptEntry };

/** A side's version, or null where that side has no record. */
export interface SideVersions {
  from: string | null;
  to: string | null;
}

export function isCorrupt(value: SideValue): value is CorruptEntry {
  return 'error' in value;
}

/** The composite version: both sides' versions, so a compare-and-set names what was seen on each. */
export function migrateVersion(from: string | undefined | null, to: string | undefined | null): string {
  return JSON.stringify([from ?? null, to ?? null]);
}

/**
 * The migrating view's creation: `from`'s where `from` has the key (it is
 * written first, so an update that creates the `to` copy keeps it), else
 * `to`'s; tagged with the side, so the two backends' values never collide.
 * Unordered (two backends' orders do not compare): migrate declares no
 * `orderedCreation`. It changes once when the key leaves `from` (phase 2).
 */
export function migrateCreated(from: { created?: string } | undefined, to: { created?: string } | undefined): string | undefined {
  if (from?.created !== undefined) return `from:${from.created}`;
  if (to?.created !== undefined) return `to:${to.created}`;
  return undefined;
}

/** Parses a composite version; a version this store did not make is a CONFLICT (nothing can match it). */
export function parseMigrateVersion(key: RecordKey, version: string): SideVersions {
  let parsed: unknown;
  try {
    parsed = JSON.parse(version);
  } catch {
    parsed = undefined;
  }
  const pair = Array.isArray(parsed) && parsed.length === 2 && parsed.every((v) => v === null || typeof v === 'string') ? (parsed as (string | null)[]) : undefined;
  if (!pair || (pair[0] === null && pair[1] === null)) throw new StoreConflictError('CONFLICT', `${key}: version ${JSON.stringify(version)} was not made by a migrate store`, { backend: 'migrate' });
  return { from: pair[0] ?? null, to: pair[1] ?? null };
}

function renewedAt(record: LeaseRecord): number {
  return parseTime(record.renewTime)?.getTime() ?? Number.NEGATIVE_INFINITY;
}

/**
 * One record from the two sides' records. The fencing token is the higher of
 * the two, so a new term continues above both. The same holder on both (a
 * member, or a migrating holder): the newer record, by renewTime (`to` on a
 * tie). A side that is free gives way to the other side's holder. Two
 * different holders: {@link UNKNOWN_HOLDER}, so a migrating
 * process waits until neither side has changed for a lease (client-go's
 * MultiLock `UnknownLeader`).
 */
export function mergeRecords(from: LeaseRecord, to: LeaseRecord): LeaseRecord {
  const leaseTransitions = Math.max(from.leaseTransitions, to.leaseTransitions);
  const leaseDurationSeconds = Math.max(from.leaseDurationSeconds, to.leaseDurationSeconds);
  const newer = renewedAt(from) > renewedAt(to) ? from : to;
  if (from.holderIdentity === to.holderIdentity) return { ...newer, leaseTransitions, leaseDurationSeconds };
  if (from.holderIdentity === '') return { ...to, leaseTransitions, leaseDurationSeconds };
  if (to.holderIdentity === '') return { ...from, leaseTransitions, leaseDurationSeconds };
  return { holderIdentity: UNKNOWN_HOLDER, leaseDurationSeconds, acquireTime: newer.acquireTime, renewTime: newer.renewTime, leaseTransitions };
}

/** The migrating view of one key; undefined when neither side has it. A corrupt side makes the key corrupt. */
export function mergeValues(key: RecordKey, from: SideValue | undefined, to: SideValue | undefined): MergedValue | undefined {
  if (!from && !to) return undefined;
  const version = migrateVersion(from?.version, to?.version);
  const corrupt = (from && isCorrupt(from) ? from : undefined) ?? (to && isCorrupt(to) ? to : undefined);
  const created = migrateCreated(from, to);
  if (corrupt) return { corrupt: created === undefined ? { key, version, error: corrupt.error } : { key, version, error: corrupt.error, created } };
  const f = from as StoredRecord | undefined;
  const t = to as StoredRecord | undefined;
  const record = f && t ? mergeRecords(f.record, t.record) : (f ?? t)!.record;
  return { stored: { key, version, record, created: created! } };
}

/** The version a merged value carries. */
export function mergedVersion(value: MergedValue | undefined): string | undefined {
  return value ? (value.stored ?? value.corrupt).version : undefined;
}
