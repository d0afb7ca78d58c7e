import { confirmByWrite, type Confirmation } from './expiry.js';
import { formatMicroTime, type LeaseRecord } from './lease-record.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, StoredRecord } from './store.js';

/**
 * Whether a member record is marked expired (its holder cleared). An expired
 * member's record is marked by compare-and-set before it is deleted: the one
 * process whose mark lands deletes it, so a crashed member costs one delete
 * however many read its role, and readers learn the reason (`removed`,
 * `expired`). A member that is in fact alive writes its record again and is
 * added again. @internal
 */
export function isMarked(record: LeaseRecord): boolean {
  return record.holderIdentity === '';
}

/**
 * The mark of an expired member's record: its holder cleared, its data kept,
 * its renewTime the marker's wall clock — so that marking a mark again (when
 * its marker died before deleting) still changes the record, and a second
 * marker's compare-and-set fails. @internal
 */
export function markExpired(record: LeaseRecord, wallNow: Date): LeaseRecord {
  return { ...record, holderIdentity: '', renewTime: formatMicroTime(wallNow) };
}

/**
 * Marks the member record `key`, judged expired at `version`, by
 * compare-and-set ({@link confirmByWrite}), and when that mark lands deletes it
 * (compare-and-set on the mark). `confirmed`: this process marked it, so the
 * delete was its to make (if that failed, the mark stays and expires in its
 * turn, and one reader marks it again); `changed` or `gone`: someone wrote or deleted it first. Rejects when
 * the backend could not say.
 * @internal
 */
export async function markAndDelete(store: Pick<MonitoredStore, 'update' | 'delete'>, key: RecordKey, version: string, record: LeaseRecord, wallNow: Date): Promise<Confirmation> {
  let mark: StoredRecord | undefined;
  const confirmation = await confirmByWrite(async () => (mark = await store.update(key, markExpired(record, wallNow), version)));
  // A delete that fails leaves the mark, which expires in its turn: not this call's failure.
  if (confirmation === 'confirmed') await confirmByWrite(() => store.delete(key, mark!.version)).catch(() => undefined);
  return confirmation;
}
