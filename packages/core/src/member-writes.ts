import type { Clock } from './clock.js';
import { ErrorCode, hasCode, UnavailableError } from './errors.js';
import { confirmByWrite } from './expiry.js';
import type { LeaseRecord } from './lease-record.js';
import { isMarked, markAndDelete } from './liveness-judge.js';
import { isWithdrawn, markWithdrawn } from './member-withdraw.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, StoredRecord } from './store.js';

/** A member's last write of one of its records. @internal */
export interface Slot {
  own: StoredRecord | undefined;
}

/** Attempts at getting an earlier incarnation's record out of the way before giving up (the caller retries later). */
const ATTEMPTS = 4;

/** A record found in the way belongs to a live incarnation this member may not remove (its successor, announced under the same id). @internal */
export class Superseded extends Error {
  constructor(readonly found: StoredRecord) {
    super(`${found.key}: a later incarnation of this member holds it`);
  }
}

/**
 * Creates a record of a new incarnation. A record found in the way (an
 * earlier incarnation of this id: a restart within its lease, or this
 * member's own lost one) is removed by compare-and-set first — a member
 * record marked and deleted, so readers see it `removed` before the new one
 * is `added`, never an `updated` that spans two incarnations — unless
 * `mayRemove` refuses it: then it rejects with {@link Superseded}.
 * @internal
 */
export async function createAnew(store: MonitoredStore, key: RecordKey, record: () => LeaseRecord, isMember: boolean, clock: Clock, mayRemove: (found: StoredRecord) => boolean = () => true): Promise<StoredRecord> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await store.create(key, record());
    } catch (err) {
      if (attempt >= ATTEMPTS || !hasCode(err, ErrorCode.ALREADY_EXISTS)) throw err;
    }
    const found = await store.get(key);
    if (!found) continue;
    if (!mayRemove(found)) throw new Superseded(found);
    if (isMember && !isMarked(found.record)) await markAndDelete(store, key, found.version, found.record, clock.wallNow());
    else await confirmByWrite(() => store.delete(key, found.version));
  }
}

/**
 * Compare-and-sets a record of a live incarnation on the version it last
 * wrote. `deleted` when it is gone, `taken` when someone else wrote it (a
 * peer's or a reaper's mark), `superseded` when a later incarnation of the
 * same id holds it (a successor announced under this id); a write of its own
 * that landed after its timeout is taken up and written on.
 * Never creates: an incarnation whose record vanished is over. `beforeSend`
 * runs before every attempt (it throws once the incarnation is past its
 * deadline: a retry after a slow read must not write for it).
 * @internal
 */
export async function renewOwn(store: MonitoredStore, key: RecordKey, slot: Slot, id: string, record: () => LeaseRecord, beforeSend: () => void): Promise<'written' | 'deleted' | 'taken' | 'superseded'> {
  for (let attempt = 1; ; attempt++) {
    const own = slot.own!;
    beforeSend();
    try {
      slot.own = await store.update(key, record(), own.version);
      return 'written';
    } catch (err) {
      if (hasCode(err, ErrorCode.NOT_FOUND)) return 'deleted';
      if (!hasCode(err, ErrorCode.CONFLICT)) throw err;
    }
    const fresh = await store.get(key);
    if (!fresh) return 'deleted';
    if (!isOwnWrite(fresh, own, id)) return isLiveSuccessor(fresh, own, id) ? 'superseded' : 'taken';
    if (attempt >= ATTEMPTS) throw new UnavailableError(`${key}: its own writes keep conflicting; retried at the next heartbeat`);
    slot.own = fresh;
  }
}

/** What a read of a live incarnation's record found: still its own (whatever its version), or why not. @internal */
export function checkOwn(fresh: StoredRecord | undefined, own: StoredRecord, id: string): 'present' | 'deleted' | 'taken' | 'superseded' {
  if (!fresh) return 'deleted';
  if (fresh.created === own.created && fresh.record.holderIdentity === id && fresh.record.acquireTime === own.record.acquireTime) return 'present';
  return isLiveSuccessor(fresh, own, id) ? 'superseded' : 'taken';
}

/** Another creation under this id, unmarked (neither expired nor withdrawn): a later incarnation of the member. */
function isLiveSuccessor(fresh: StoredRecord, own: StoredRecord, id: string): boolean {
  return fresh.created !== own.created && fresh.record.holderIdentity === id && !isMarked(fresh.record) && !isWithdrawn(fresh.record);
}

/** The same creation, unmarked, this id, this incarnation's acquireTime: a write of ours. */
function isOwnWrite(fresh: StoredRecord, own: StoredRecord, id: string): boolean {
  return fresh.created === own.created && fresh.record.holderIdentity === id && fresh.record.acquireTime === own.record.acquireTime;
}

/**
 * Deletes a record this member created, `own` its last write of it: by
 * compare-and-set, and after a CONFLICT only if what is there is the same
 * creation (a write of its own that landed late, or a peer's mark of it) —
 * never a later incarnation's record under the same id. Gone is done.
 * @internal
 */
export async function deleteOwn(store: Pick<MonitoredStore, 'get' | 'delete'>, key: RecordKey, own: StoredRecord | undefined): Promise<void> {
  if (!own) return;
  let version = own.version;
  for (let attempt = 1; ; attempt++) {
    try {
      await store.delete(key, version);
      return;
    } catch (err) {
      if (hasCode(err, ErrorCode.NOT_FOUND)) return;
      if (!hasCode(err, ErrorCode.CONFLICT) || attempt >= ATTEMPTS) throw err;
    }
    const fresh = await store.get(key);
    if (!fresh || fresh.created !== own.created) return;
    version = fresh.version;
  }
}

/**
 * A graceful withdraw of a member record this member created, `own` its last
 * write of it: marks it withdrawn by compare-and-set, then deletes the mark
 * ({@link deleteOwn}). A reader that saw the mark knows the delete that follows
 * is a withdraw; one whose watch folded the mark into the delete (ZooKeeper's
 * one-shot watches, a relist) cannot tell it from a crash, and a failover runs
 * it — which the failover contract allows. After a CONFLICT it marks again only
 * its own creation still held by it (a write of its own that landed late); a
 * peer's expiry mark is deleted as it is (its readers saw it expire), a later
 * incarnation's record is left alone, and gone is done. One write more than a
 * delete alone, per withdraw.
 * @internal
 */
export async function withdrawOwn(store: Pick<MonitoredStore, 'get' | 'update' | 'delete'>, key: RecordKey, own: StoredRecord | undefined, wallNow: () => Date): Promise<void> {
  if (!own) return;
  let current = own;
  for (let attempt = 1; ; attempt++) {
    if (isMarked(current.record) || isWithdrawn(current.record)) break;
    try {
      current = await store.update(key, markWithdrawn(current.record, wallNow()), current.version);
      break;
    } catch (err) {
      if (hasCode(err, ErrorCode.NOT_FOUND)) return;
      if (!hasCode(err, ErrorCode.CONFLICT) || attempt >= ATTEMPTS) throw err;
    }
    const fresh = await store.get(key);
    if (!fresh || fresh.created !== own.created) return;
    current = fresh;
  }
  await deleteOwn(store, key, current);
}
