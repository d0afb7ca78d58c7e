import { ErrorCode, hasCode } from './errors.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey } from './store.js';
import type { Sight } from './watch-cache.js';

/**
 * What the one expiry rule says of a lease now, by this process's monotonic
 * clock: client-go's rule — a lease runs out once its record has not changed
 * for the lease duration since this process saw it change — with the time the
 * watch was blind not counted.
 * @internal
 */
export interface Expiry {
  /** Every watch the judgement rests on sees now. While one is blind nobody runs out: re-judge on `cache.onLive`. */
  live: boolean;
  /** Live and past due: ran out. Still to be confirmed with the backend ({@link confirmByWrite}, {@link confirmByRead}). */
  expired: boolean;
  /** Milliseconds until it runs out: when live and not yet expired; else undefined. */
  dueInMs: number | undefined;
  /** When it runs out by the rule (monotonic ms), live or not: a record that went at or after this had run out. */
  dueAt: number;
}

/**
 * Judges a lease of `leaseMs` milliseconds. It counts from the latest of
 * `seenAt` (when this process saw the record change, and any other time the
 * caller counts from no earlier than, such as the start of a reaper's term)
 * and of each sight's `liveSince`: once a blind watch is live again, every
 * holder gets a whole lease from then to show it is alive.
 * @internal
 */
export function judgeExpiry(leaseMs: number, seenAt: readonly number[], sights: readonly Sight[], now: number): Expiry {
  const live = sights.every((s) => s.live);
  const due = Math.max(...seenAt, ...sights.map((s) => s.liveSince)) + leaseMs;
  const expired = live && due <= now;
  return { live, expired, dueInMs: live && !expired ? due - now : undefined, dueAt: due };
}

/**
 * What a compare-and-set write on the version judged expired says of it:
 * `confirmed` (the write landed: the record had not changed), `changed` (CONFLICT:
 * written since, so not expired — the watch brings the new version) or `gone`
 * (NOT_FOUND: deleted since). Other errors reject: the backend could not say.
 * @internal
 */
export type Confirmation = 'confirmed' | 'changed' | 'gone';

/** Confirms an expiry by a compare-and-set write (`write` names the version judged): see {@link Confirmation}. @internal */
export async function confirmByWrite(write: () => Promise<unknown>): Promise<Confirmation> {
  try {
    await write();
    return 'confirmed';
  } catch (err) {
    if (hasCode(err, ErrorCode.CONFLICT)) return 'changed';
    if (hasCode(err, ErrorCode.NOT_FOUND)) return 'gone';
    throw err;
  }
}

/**
 * Confirms an expiry by a read, for a process that may not (or need not)
 * write: `confirmed` when the record is still `version`, `gone` when there is
 * none, `changed` otherwise (any record, when `version` is undefined: none was
 * seen). Rejects when the backend could not say.
 * @internal
 */
export async function confirmByRead(store: Pick<MonitoredStore, 'get'>, key: RecordKey, version: string | undefined): Promise<Confirmation> {
  const fresh = await store.get(key);
  return fresh === undefined ? 'gone' : fresh.version === version ? 'confirmed' : 'changed';
}
