import type { Clock } from './clock.js';
import { judgeExpiry } from './expiry.js';
import { formatMicroTime, type LeaseRecord } from './lease-record.js';
import { toLeaseSeconds } from './timing.js';
import type { CacheEntry } from './watch-cache.js';

/**
 * A candidate judges the holder's lease by the one rule without a sight: time
 * its watch was blind counts, since its compare-and-set on the version it saw
 * is the confirmation (a holder that renewed unseen makes it fail), and
 * waiting for sight would delay every failover behind a watch hiccup.
 */
const CANDIDATE_SIGHT = [] as const;

/**
 * What one candidate has learned of a lease record from the watch cache, for
 * deciding when it may take the record and what it writes: the tombstone of a deleted holder's
 * lease and the highest fencing token ever seen. Judged by the candidate's own
 * monotonic clock from when it saw the record change.
 * @internal
 */
export class LeaseSight {
  private tombstoneUntil = 0;
  private seenTransitions = 0;

  constructor(
    private readonly identity: string,
    /** This candidate's lease, also assumed for an entry whose record could not be read. Milliseconds. */
    private readonly leaseMs: number,
    /** The holder's renew period: the pause after a failed attempt. Milliseconds. */
    private readonly retryPeriodMs: number,
    private readonly clock: Clock,
  ) {}

  /**
   * A record deleted while someone else held it: its holder may still believe
   * it leads until the lease it last renewed runs out, so an absent record is
   * not free before then.
   */
  removed(previous: CacheEntry): void {
    const record = previous.stored?.record;
    if (!record || record.holderIdentity === '' || record.holderIdentity === this.identity) return;
    this.tombstoneUntil = Math.max(this.tombstoneUntil, previous.observedAt + record.leaseDurationSeconds * 1000);
  }

  /** Remembers the highest leaseTransitions seen, so a record re-created after a deletion never repeats a fencing token. */
  saw(entry: CacheEntry | undefined): void {
    const transitions = entry?.stored?.record.leaseTransitions;
    if (transitions !== undefined) this.seenTransitions = Math.max(this.seenTransitions, transitions);
  }

  /**
   * The record this candidate writes over `previous` (absent: a create): a new
   * term takes a fencing token above every one seen; a renew keeps its own.
   */
  recordFor(previous: LeaseRecord | undefined, newTerm: boolean): LeaseRecord {
    const now = formatMicroTime(this.clock.wallNow());
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: toLeaseSeconds(this.leaseMs),
      acquireTime: newTerm ? now : (previous?.acquireTime ?? now),
      renewTime: now,
      leaseTransitions: newTerm ? Math.max(previous?.leaseTransitions ?? 0, this.seenTransitions) + 1 : (previous?.leaseTransitions ?? 1),
    };
  }

  /** Whether an attempt may write now: a free or expired record, or an absent one whose last holder's lease has run out. */
  mayTake(entry: CacheEntry | undefined): boolean {
    if (!entry) return this.tombstoneUntil <= this.clock.now();
    const current = entry.stored?.record;
    if (current !== undefined && (current.holderIdentity === '' || current.holderIdentity === this.identity)) return true;
    const leaseMs = current ? current.leaseDurationSeconds * 1000 : this.leaseMs;
    return judgeExpiry(leaseMs, [entry.observedAt], CANDIDATE_SIGHT, this.clock.now()).expired;
  }

  /**
   * How long an acquiring candidate waits before its next attempt, given what
   * the cache shows. A record that looks free is tried at once when it changed,
   * but only after the retry period when an attempt on it just failed.
   */
  delayFor(entry: CacheEntry | undefined, afterAttempt = false): number {
    const now = this.clock.now();
    const fallback = this.retryPeriodMs * (1 + 0.2 * Math.random());
    const holder = entry?.stored?.record.holderIdentity;
    if (!entry && this.tombstoneUntil > now) return Math.min(fallback, this.tombstoneUntil - now + 1);
    if (!entry || holder === '' || holder === this.identity) return afterAttempt ? fallback : 0;
    const leaseMs = entry.stored ? entry.stored.record.leaseDurationSeconds * 1000 : this.leaseMs;
    const { dueInMs } = judgeExpiry(leaseMs, [entry.observedAt], CANDIDATE_SIGHT, now);
    if (dueInMs !== undefined) return Math.min(fallback, dueInMs + 1);
    // Expired by the cache: at once on news, but a retry period after an attempt on this same view failed (a
    // CONFLICT while the watch lags or has silently stalled would otherwise be retried in a loop).
    return afterAttempt ? fallback : 0;
  }
}
