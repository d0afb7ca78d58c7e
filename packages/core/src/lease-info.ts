import { judgeExpiry } from './expiry.js';
import { parseTime, UNKNOWN_HOLDER } from './lease-record.js';
import type { CacheEntry, Sight } from './watch-cache.js';

/** The holder of an election (its leader) or of a lock, as this process sees it. */
export interface HolderInfo {
  /** Its identity: a registry's identity, or `<identity>.<suffix>` for one lock hold. */
  identity: string;
  /** Its term's fencing token; every later term's is larger. */
  fencingToken: number;
  /** When it says it acquired (its wall clock). */
  acquireTime: Date | undefined;
  /** When it says it last renewed (its wall clock). */
  renewTime: Date | undefined;
}

/** An election or a lock as this process sees it now, from the shared watch cache. */
export interface LeaseInfo {
  /** The election's or the lock's name. */
  name: string;
  /**
   * Its holder now, or undefined when it is free: resigned or released, or not
   * renewed within its lease by this process's clock (client-go's rule).
   */
  holder: HolderInfo | undefined;
  /** The latest term's fencing token (the record's `leaseTransitions`), also when free: the next holder's is larger. 0 before the first term. */
  fencingToken: number;
  /** The lease its holder writes: how long others wait after the last renewal before taking over. Milliseconds. */
  leaseDurationMs: number;
  /** When the record was last written (its writer's wall clock): a renewal, or the release. */
  renewTime: Date | undefined;
}

/** A change in the elections or the locks of the cluster. */
export type LeaseEvent =
  /** One this process sees: each existing one when the watch starts, then each new record. */
  | { type: 'added'; lease: LeaseInfo }
  /**
   * Its holder changed. `acquired`: a new holder or a new term (or a holder seen
   * renewing again after it was judged expired); `released`: resigned or released;
   * `expired`: not renewed within its lease, by this process's clock. Renewals
   * that keep the holder and the term are not events.
   */
  | { type: 'changed'; lease: LeaseInfo; previous: LeaseInfo; reason: 'acquired' | 'released' | 'expired' }
  /** Its record was deleted; `lease` is its last known state. */
  | { type: 'removed'; lease: LeaseInfo };

export type LeaseListener = (event: LeaseEvent) => void;

/**
 * What a cache entry says of its lease now, by this process's clock: the lease
 * with the holder it still has by time, the holder the record names, and in how
 * many milliseconds that holder runs out (when that is still to come). Judged
 * by {@link judgeExpiry}, counting from when this process saw the record change
 * or from `aliveSince`, blind time not counted (the caller re-judges on
 * `cache.onLive`); `sight` is the cache's for the entry's key. Undefined for a
 * record that cannot be decoded.
 * @internal
 */
export function judgeLease(
  name: string,
  entry: CacheEntry,
  sight: Sight,
  now: number,
  aliveSince = 0,
): { lease: LeaseInfo; named: HolderInfo | undefined; expiresInMs: number | undefined } | undefined {
  const record = entry.stored?.record;
  if (!record) return undefined;
  const leaseDurationMs = record.leaseDurationSeconds * 1000;
  // A store that cannot name the holder (a migration whose two sides disagree) is between terms: no holder named, nor free.
  const named = record.holderIdentity === '' || record.holderIdentity === UNKNOWN_HOLDER ? undefined : { identity: record.holderIdentity, fencingToken: record.leaseTransitions, acquireTime: parseTime(record.acquireTime), renewTime: parseTime(record.renewTime) };
  const expiry = judgeExpiry(leaseDurationMs, [entry.observedAt, aliveSince], [sight], now);
  const held = named !== undefined && !expiry.expired;
  return {
    lease: { name, holder: held ? named : undefined, fencingToken: record.leaseTransitions, leaseDurationMs, renewTime: parseTime(record.renewTime) },
    named,
    expiresInMs: held ? expiry.dueInMs : undefined,
  };
}

/** Whether two views of one lease name the same holder in the same term (renewals aside). @internal */
export function sameHolder(a: HolderInfo | undefined, b: HolderInfo | undefined): boolean {
  return a?.identity === b?.identity && a?.fencingToken === b?.fencingToken;
}
