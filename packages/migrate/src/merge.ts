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
 * The migrating view's creation of a key, tagged with the side it comes from
 * (`from:`/`to:`), so the two backends' values never collide. Unordered (two
 * backends' orders do not compare): migrate declares no `orderedCreation`.
 *
 * Without history (`get`, `list`): `from`'s where both sides hold one life of
 * the key (the same `acquireTime`: a migrating writer writes one record to
 * both) or only `from` has it; `to`'s where only `to` has it; the newer side's
 * (by renewTime) where the two hold different lives. A watch passes what it
 * showed last (`shown`) and keeps that while the key stays one life in its
 * view — the side it names still has that creation, or has lost the key while
 * the other side holds the same life — so a migrating writer's create (from,
 * then to) and delete (from, then to) never change it, and a member keeps one
 * incarnation in a migrating watch. `to`'s copy of a life this store created
 * on `from` carries `from`'s creation (`LeaseRecord.createdAs`): a watch that
 * sees it first, or a relist while only `to` holds it, names it `from:`.
 */
export function migrateCreated(from: SideValue | undefined, to: SideValue | undefined, shown?: StoredRecord): string | undefined {
  if (shown && keepsCreated(shown, from, to)) return shown.created;
  const tag = (side: Side, value: SideValue) => `${side}:${value.created}`;
  const f = from?.created !== undefined ? from : undefined;
  const t = to?.created !== undefined ? to : undefined;
  // `to`'s copy of a life this store created on `from` first says so: the same name whichever side is seen first.
  const toName = (value: SideValue) => (!isCorrupt(value) && value.record.createdAs) || tag('to', value);
  if (f && t && !isCorrupt(f) && !isCorrupt(t) && t.record.createdAs === tag('from', f)) return tag('from', f);
  if (f && t && !isCorrupt(f) && !isCorrupt(t) && f.record.acquireTime !== t.record.acquireTime) return renewedAt(f.record) > renewedAt(t.record) ? tag('from', f) : toName(t);
  if (f) return tag('from', f);
  if (t) return toName(t);
  return undefined;
}

/** Whether the view still shows the life it showed as `shown` (see {@link migrateCreated}). */
function keepsCreated(shown: StoredRecord, from: SideValue | undefined, to: SideValue | undefined): boolean {
  const colon = shown.created.indexOf(':');
  const side = shown.created.slice(0, colon);
  const created = shown.created.slice(colon + 1);
  const own = side === 'from' ? from : side === 'to' ? to : undefined;
  const other = side === 'from' ? to : from;
  const acquired = (value: SideValue | undefined) => (value && !isCorrupt(value) ? value.record.acquireTime : undefined);
  if (own) return own.created === created && (other === undefined || acquired(other) === acquired(own));
  return other !== undefined && acquired(other) === shown.record.acquireTime;
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
export function mergeRecords(fromSide: LeaseRecord, toSide: LeaseRecord): LeaseRecord {
  // The creation tag is this store's bookkeeping between its sides, not the record's.
  const { createdAs: _fromTag, ...from } = fromSide;
  const { createdAs: _toTag, ...to } = toSide;
  const leaseTransitions = Math.max(from.leaseTransitions, to.leaseTransitions);
  const leaseDurationSeconds = Math.max(from.leaseDurationSeconds, to.leaseDurationSeconds);
  const newer = renewedAt(from) > renewedAt(to) ? from : to;
  if (from.holderIdentity === to.holderIdentity) return { ...newer, leaseTransitions, leaseDurationSeconds };
  if (from.holderIdentity === '') return { ...to, leaseTransitions, leaseDurationSeconds };
  if (to.holderIdentity === '') return { ...from, leaseTransitions, leaseDurationSeconds };
  return { holderIdentity: UNKNOWN_HOLDER, leaseDurationSeconds, acquireTime: newer.acquireTime, renewTime: newer.renewTime, leaseTransitions };
}

/** `record` without this store's creation tag (see {@link mergeRecords}). */
function withoutTag(record: LeaseRecord): LeaseRecord {
  if (record.createdAs === undefined) return record;
  const { createdAs: _tag, ...rest } = record;
  return rest;
}

/** The migrating view of one key; undefined when neither side has it. A corrupt side makes the key corrupt. */
export function mergeValues(key: RecordKey, from: SideValue | undefined, to: SideValue | undefined, shown?: MergedValue): MergedValue | undefined {
  if (!from && !to) return undefined;
  const version = migrateVersion(from?.version, to?.version);
  const corrupt = (from && isCorrupt(from) ? from : undefined) ?? (to && isCorrupt(to) ? to : undefined);
  const created = migrateCreated(from, to, shown?.stored);
  if (corrupt) return { corrupt: created === undefined ? { key, version, error: corrupt.error } : { key, version, error: corrupt.error, created } };
  const f = from as StoredRecord | undefined;
  const t = to as StoredRecord | undefined;
  const record = f && t ? mergeRecords(f.record, t.record) : withoutTag((f ?? t)!.record);
  return { stored: { key, version, record, created: created! } };
}

/** The version a merged value carries. */
export function mergedVersion(value: MergedValue | undefined): string | undefined {
  return value ? (value.stored ?? value.corrupt).version : undefined;
}
