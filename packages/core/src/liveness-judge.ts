import type { Clock, Timer } from './clock.js';
import { ErrorCode, hasCode } from './errors.js';
import { confirmByRead, confirmByWrite, type Confirmation, type Expiry } from './expiry.js';
import { formatMicroTime, type LeaseRecord } from './lease-record.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, StoredRecord } from './store.js';

/** One thing a {@link LivenessJudge} judges: a member record, a mark, a reaper's pair of records. @internal */
export interface Judged {
  /** What the one rule ({@link judgeExpiry}) says of it now, from what this process observed. */
  expiry(): Expiry;
  /** Asks the backend whether it ran out (see {@link Confirmation}); rejects when the backend could not say. */
  confirm(): Promise<Confirmation>;
  /** Its expiry was confirmed (`confirmed` or `gone`). Judged again a retry delay later unless forgotten meanwhile. */
  expired(confirmation: Exclude<Confirmation, 'changed'>): void;
}

interface Slot {
  key: string;
  judged: Judged;
  timer: Timer | undefined;
  /** A confirmation is in flight: not armed until it settles. */
  confirming: boolean;
}

/** @internal */
export interface LivenessJudgeOptions {
  clock: Clock;
  logger: Logger;
  /** Delay before judging again after the backend could not say, or said `changed`. Milliseconds. */
  retryMs: number;
}

/**
 * The one loop that turns the expiry rule into removals, for the member
 * directory, a reaper's pairs and a read-only reader's pairs alike: **arm** a
 * timer for when each judged thing runs out by the rule (none while a watch it
 * rests on is blind: {@link rearm} when it is back), **confirm** with the
 * backend once it has (by the owner's confirm policy: a mark, a reaper's
 * deletes, a read), and **retry** a delay later when the backend could not say
 * or the record changed. Keyed: tracking a key again replaces what was judged
 * under it, and a confirmation of what was replaced is ignored.
 * @internal
 */
export class LivenessJudge {
  private readonly slots = new Map<string, Slot>();

  constructor(private readonly options: LivenessJudgeOptions) {}

  /** Judges `judged` under `key` from now on. The same object again while it is being confirmed changes nothing: it is armed once that settles. */
  track(key: string, judged: Judged): void {
    const slot = this.slots.get(key);
    if (slot?.judged === judged && slot.confirming) return;
    slot?.timer?.cancel();
    const next: Slot = { key, judged, timer: undefined, confirming: false };
    this.slots.set(key, next);
    this.arm(next);
  }

  /** Stops judging `key`. */
  forget(key: string): void {
    this.slots.get(key)?.timer?.cancel();
    this.slots.delete(key);
  }

  /** Whether a confirmation of `key` is in flight: a removal arriving now is the expiry being confirmed. */
  confirming(key: string): boolean {
    return this.slots.get(key)?.confirming ?? false;
  }

  /** Judges again every key `covered` accepts (default: all): a watch came back, so blind time is not counted and timers are set again. */
  rearm(covered: (key: string) => boolean = () => true): void {
    for (const slot of this.slots.values()) if (covered(slot.key)) this.arm(slot);
  }

  close(): void {
    this.slots.forEach((s) => s.timer?.cancel());
    this.slots.clear();
  }

  private arm(slot: Slot, atLeastMs = 0): void {
    slot.timer?.cancel();
    slot.timer = undefined;
    if (slot.confirming) return;
    const expiry = slot.judged.expiry();
    if (!expiry.live) return;
    slot.timer = this.options.clock.setTimeout(() => this.check(slot), Math.max(atLeastMs, expiry.dueInMs ?? 0));
  }

  private current(slot: Slot): boolean {
    return this.slots.get(slot.key) === slot;
  }

  private check(slot: Slot): void {
    if (!this.current(slot)) return;
    const expiry = slot.judged.expiry();
    // While a watch is down, an unseen renewal is our blindness, not a death: decided once it is back (rearm).
    if (!expiry.live) return;
    if (!expiry.expired) return this.arm(slot);
    slot.confirming = true;
    slot.judged.confirm().then(
      (confirmation) => {
        slot.confirming = false;
        if (!this.current(slot)) return;
        // changed: it renewed, and the watch brings the new version; the retry is the fallback.
        if (confirmation !== 'changed') slot.judged.expired(confirmation);
        if (this.current(slot)) this.arm(slot, this.options.retryMs);
      },
      (err: unknown) => {
        slot.confirming = false;
        this.options.logger.debug({ err, key: slot.key }, '[rollcall] could not confirm an expiry; trying again');
        if (this.current(slot)) this.arm(slot, this.options.retryMs);
      },
    );
  }
}

/**
 * How this process confirms that a member record it judged expired ran out:
 * {@link confirmByMark} for a registry that writes, {@link confirmByReading}
 * for one opened `registry.readOnly`. Given once to the judge; nothing else
 * asks whether the registry writes.
 * @internal
 */
export type ConfirmPolicy = (store: Pick<MonitoredStore, 'get' | 'update' | 'delete'>, key: RecordKey, stored: StoredRecord, wallNow: Date) => Promise<Confirmation>;

/**
 * Marks and deletes the record ({@link markAndDelete}): one delete per crashed
 * member however many read its role. An identity that may not write still may
 * read: the record unchanged is as good a proof.
 * @internal
 */
export const confirmByMark: ConfirmPolicy = (store, key, stored, wallNow) =>
  markAndDelete(store, key, stored.version, stored.record, wallNow).catch(async (err: unknown) => {
    if (hasCode(err, ErrorCode.PERMISSION_DENIED)) return confirmByRead(store, key, stored.version);
    throw err;
  });

/** Reads the record unchanged (`registry.readOnly`): never a mark or a delete. @internal */
export const confirmByReading: ConfirmPolicy = (store, key, stored) => confirmByRead(store, key, stored.version);

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
 * turn, and one reader marks it again); `changed` or `gone`: someone wrote or
 * deleted it first. Rejects when the backend could not say.
 * @internal
 */
export async function markAndDelete(store: Pick<MonitoredStore, 'update' | 'delete'>, key: RecordKey, version: string, record: LeaseRecord, wallNow: Date): Promise<Confirmation> {
  let mark: StoredRecord | undefined;
  const confirmation = await confirmByWrite(async () => (mark = await store.update(key, markExpired(record, wallNow), version)));
  // A delete that fails leaves the mark, which expires in its turn: not this call's failure.
  if (confirmation === 'confirmed') await confirmByWrite(() => store.delete(key, mark!.version)).catch(() => undefined);
  return confirmation;
}
