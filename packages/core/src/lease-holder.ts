import type { Clock, Timer } from './clock.js';
import { ErrorCode, hasCode, type RegistryError } from './errors.js';
import { Emitter } from './emitter.js';
import { formatMicroTime, type LeaseRecord } from './lease-record.js';
import { LeaseSight } from './lease-sight.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, StoredRecord } from './store.js';
import type { LeaseTiming } from './timing.js';
import type { CacheChange, Claim, WatchCache } from './watch-cache.js';

/** Why a holder stopped holding. */
export type LeaseLossReason =
  /** `resign()` or `release()` was called. */
  | 'released'
  /** No renew succeeded within renewDeadlineMs: stepped down before anyone else could take over. */
  | 'renew-deadline'
  /** Another identity holds the record now (or it was edited by hand). */
  | 'taken'
  /** The record was deleted under the holder. */
  | 'deleted'
  /** The backend declared the session lost (every lease has expired). */
  | 'connection-lost'
  /** The registry was closed. */
  | 'closed'
  /** The backend refused this identity (PERMISSION_DENIED, UNAUTHENTICATED): the campaign ended; see the `failed` event. */
  | 'failed';

/** @internal */
export interface LeaseHolderEvents {
  acquired: { fencingToken: number; record: LeaseRecord };
  lost: { fencingToken: number; reason: LeaseLossReason };
  /** The backend refused this identity or this record for good; the holder has stopped. */
  failed: { error: RegistryError };
}

/** Errors that retrying cannot cure: the holder stops and reports them. */
function isFatal(err: unknown): err is RegistryError {
  return hasCode(err, ErrorCode.PERMISSION_DENIED, ErrorCode.UNAUTHENTICATED, ErrorCode.INVALID_ARGUMENT, ErrorCode.PAYLOAD_TOO_LARGE);
}

/** @internal */
export interface LeaseHolderOptions {
  key: RecordKey;
  identity: string;
  timing: LeaseTiming;
  store: MonitoredStore;
  cache: WatchCache;
  clock: Clock;
  logger: Logger;
  /** Lock mode: hold one term, then stop. Election mode (false): campaign again after a loss. */
  once: boolean;
}

interface Term {
  fencingToken: number;
  /** Our last successful write, whose version the next renew names. */
  own: StoredRecord;
  /** Monotonic time at which the last successful write was sent: the holder's deadline counts from here. */
  renewedAt: number;
}

/**
 * client-go's leader-election algorithm over the record store, serving both
 * elections and locks. Followers decide from the shared watch cache, judging
 * expiry by their own monotonic clock from when they last saw the record
 * change; a holder renews every retryPeriod and steps down when renewDeadline
 * passes without a successful renew, which is before leaseDuration lets anyone
 * else in. Every new term increments leaseTransitions: the fencing token.
 * @internal
 */
export class LeaseHolder extends Emitter<LeaseHolderEvents> {
  private mode = 'idle' as 'idle' | 'acquiring' | 'holding' | 'stopped';
  private term: Term | undefined;
  private attemptTimer: Timer | undefined;
  private deadlineTimer: Timer | undefined;
  private inFlight: Promise<void> | undefined;
  private unsubscribe: (() => void) | undefined;
  /** The cache's hold on this record's scope: acquire() waits until the record is listed. */
  private claim: Claim | undefined;
  private stopping = false;
  private attemptStartedAt = 0;
  private again = false;
  private failure: RegistryError | undefined;
  private accessChecked = false;
  private readonly sight: LeaseSight;

  constructor(private readonly options: LeaseHolderOptions) {
    super(options.logger);
    this.sight = new LeaseSight(options.identity, options.timing.leaseDurationMs, options.timing.retryPeriodMs, options.clock);
  }

  /**
   * Whether this process may act as holder now: judged by the monotonic clock
   * against the last successful renew plus the renew deadline at the moment of
   * reading, so a process resumed from a pause reads false before its overdue
   * deadline timer has run. The timer only announces the loss.
   */
  get isHolding(): boolean {
    return this.mode === 'holding' && this.term !== undefined && this.withinDeadline(this.term);
  }

  /** The current term's fencing token while holding (by the same clock rule); undefined otherwise. */
  get fencingToken(): number | undefined {
    return this.isHolding ? this.term!.fencingToken : undefined;
  }

  get stopped(): boolean {
    return this.mode === 'stopped';
  }

  /** Campaigns until it holds; in election mode, again after every loss. */
  start(): void {
    if (this.mode !== 'idle') return;
    this.mode = 'acquiring';
    this.claim = this.options.cache.claim(this.options.key);
    this.unsubscribe = this.follow(this.claim);
    this.run(() => this.acquire());
  }

  /** Follows the record's changes in the cache; the returned function ends that and the claim on its scope. */
  private follow(claim: Claim): () => void {
    const off = this.options.cache.watchKey(this.options.key, (change) => this.onRecordChanged(change));
    return () => {
      off();
      claim.release();
    };
  }

  /** One acquisition attempt without campaigning further; resolves whether it now holds. */
  async tryOnce(): Promise<boolean> {
    if (this.mode !== 'idle') return this.mode === 'holding';
    this.mode = 'acquiring';
    const claim = this.options.cache.claim(this.options.key);
    this.claim = claim;
    await this.run(() => this.acquire(), false);
    if (this.failure) {
      claim.release();
      throw this.failure;
    }
    // acquire() may have moved the mode on; the getter is not narrowed.
    if (!this.isHolding) {
      this.mode = 'stopped';
      claim.release();
      return false;
    }
    if (this.stopping) {
      claim.release();
      return true;
    }
    this.unsubscribe = this.follow(claim);
    this.schedule(Math.max(0, this.term!.renewedAt + this.options.timing.retryPeriodMs - this.options.clock.now()));
    return true;
  }

  /** Stops campaigning; a holder announces the loss first, then frees the record (client-go's release). */
  async stop(reason: 'released' | 'closed'): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.cancelTimers();
    this.unsubscribe?.();
    await this.inFlight;
    const term = this.term;
    const wasHolding = this.mode === 'holding';
    this.mode = 'stopped';
    this.term = undefined;
    if (wasHolding && term) {
      this.emit('lost', { fencingToken: term.fencingToken, reason });
      await this.free(term);
    }
  }

  /** The backend says every lease has expired: a holder has already lost. */
  connectionLost(): void {
    if (this.mode === 'holding') this.stepDown('connection-lost');
  }

  private onRecordChanged(change: CacheChange): void {
    if (this.stopping) return;
    if (change.type === 'removed') this.sight.removed(change.previous);
    const entry = this.options.cache.get(this.options.key);
    this.sight.saw(entry);
    if (this.mode === 'acquiring') {
      this.schedule(this.sight.delayFor(entry));
    } else if (this.mode === 'holding' && entry?.stored && entry.stored.record.holderIdentity !== this.options.identity) {
      // Someone else wrote a holder: check at once rather than at the next renew.
      this.schedule(0);
    }
  }

  private schedule(delayMs: number): void {
    this.attemptTimer?.cancel();
    this.attemptTimer = this.options.clock.setTimeout(() => {
      this.attemptTimer = undefined;
      if (this.mode === 'acquiring') this.run(() => this.acquire());
      else if (this.mode === 'holding') this.run(() => this.renew());
    }, delayMs);
  }

  /** Runs one attempt at a time; an attempt asked for meanwhile runs right after. */
  private run(attempt: () => Promise<void>, reschedule = true): Promise<void> {
    if (this.inFlight) {
      // Asked for while one runs (the record changed meanwhile): run again right after it, on the news.
      if (reschedule) this.again = true;
      return this.inFlight;
    }
    this.attemptStartedAt = this.options.clock.now();
    const done = attempt()
      .catch((err: unknown) => {
        if (isFatal(err)) return this.fail(err);
        this.options.logger.error({ err, key: this.options.key }, '[rollcall] lease attempt failed unexpectedly');
      })
      .finally(() => {
        this.inFlight = undefined;
        const again = this.again;
        this.again = false;
        if (!reschedule || this.stopping) return;
        if (again && (this.mode === 'acquiring' || this.mode === 'holding')) return this.schedule(0);
        if (this.attemptTimer) return;
        if (this.mode === 'acquiring') this.schedule(this.sight.delayFor(this.options.cache.get(this.options.key), true));
        else if (this.mode === 'holding') this.schedule(Math.max(0, this.attemptStartedAt + this.options.timing.retryPeriodMs - this.options.clock.now()));
      });
    this.inFlight = done;
    return done;
  }

  private async acquire(): Promise<void> {
    const { key, store, clock, identity } = this.options;
    if (!this.accessChecked) {
      try {
        await store.assertCanHold(key);
        this.accessChecked = true;
      } catch (err) {
        if (hasCode(err, ErrorCode.UNAVAILABLE)) return;
        throw err; // PERMISSION_DENIED ends the campaign at once
      }
    }
    if (this.claim && !this.claim.listed) {
      try {
        await this.claim.ready();
      } catch {
        return; // unreachable, or closed: the fallback timer brings the next attempt
      }
      if (this.stopping) return;
    }
    const entry = this.options.cache.get(key);
    this.sight.saw(entry);
    if (!this.sight.mayTake(entry)) return;
    const sentAt = clock.now();
    let written: StoredRecord;
    try {
      written = entry ? await store.update(key, this.sight.recordFor(entry.stored?.record, true), entry.version) : await store.create(key, this.sight.recordFor(undefined, true));
    } catch (err) {
      if (!hasCode(err, ErrorCode.CONFLICT, ErrorCode.ALREADY_EXISTS, ErrorCode.NOT_FOUND, ErrorCode.UNAVAILABLE)) throw err;
      return; // lost the race, or unreachable: the watch or the fallback timer brings the next attempt
    }
    const term: Term = { fencingToken: written.record.leaseTransitions, own: written, renewedAt: sentAt };
    this.term = term;
    this.mode = 'holding';
    // The watch may have shown our own write while this attempt ran: that asked for another acquisition, not for a
    // renew at once, which would repeat renewTime within the millisecond. The first renew is a retry period away.
    this.attemptTimer?.cancel();
    this.attemptTimer = undefined;
    this.again = false;
    this.armDeadline();
    if (!this.withinDeadline(term)) {
      // Read last before announcing: a reply back after its deadline, or a pause before here, must not announce it.
      this.cancelTimers();
      this.term = undefined;
      this.mode = 'acquiring';
      this.options.logger.warn({ key, identity, fencingToken: term.fencingToken }, '[rollcall] acquired past the renew deadline; giving it back');
      return this.free(term);
    }
    if (this.stopping) return; // stop() frees it right after this attempt
    this.emit('acquired', { fencingToken: term.fencingToken, record: written.record });
    this.options.logger.info({ key, identity, fencingToken: term.fencingToken }, '[rollcall] acquired');
  }

  private async renew(): Promise<void> {
    const term = this.term;
    if (!term) return;
    // Past the deadline the term is over even if a write could still land: an overdue timer must not extend it.
    if (!this.withinDeadline(term)) return this.stepDown('renew-deadline');
    const { key, store, clock, identity } = this.options;
    const sentAt = clock.now();
    try {
      const written = await store.update(key, this.sight.recordFor(term.own.record, false), term.own.version);
      if (this.term !== term) return;
      term.own = written;
      term.renewedAt = sentAt;
      this.armDeadline();
    } catch (err) {
      if (this.term !== term) return;
      if (isFatal(err)) throw err;
      if (!hasCode(err, ErrorCode.CONFLICT, ErrorCode.NOT_FOUND)) return; // retried at the next period until the deadline
      let fresh: StoredRecord | undefined;
      try {
        fresh = await store.get(key);
      } catch {
        return;
      }
      if (this.term !== term) return;
      if (fresh && fresh.record.holderIdentity === identity && fresh.record.leaseTransitions === term.fencingToken) {
        term.own = fresh; // our own write landed after its timeout; renew on top of it
        this.schedule(0);
        return;
      }
      this.stepDown(fresh ? 'taken' : 'deleted');
    }
  }

  /** Stops for good on an error retrying cannot cure; a holder first announces its loss. */
  private fail(error: RegistryError): void {
    if (this.mode === 'stopped') return;
    this.failure = error;
    this.cancelTimers();
    this.unsubscribe?.();
    const term = this.term;
    this.term = undefined;
    this.mode = 'stopped';
    this.options.logger.error({ err: error, key: this.options.key, identity: this.options.identity }, '[rollcall] the backend refused this lease; stopped');
    if (term) this.emit('lost', { fencingToken: term.fencingToken, reason: 'failed' });
    this.emit('failed', { error });
  }

  private withinDeadline(term: Term): boolean {
    return this.options.clock.now() < term.renewedAt + this.options.timing.renewDeadlineMs;
  }

  private armDeadline(): void {
    const term = this.term!;
    this.deadlineTimer?.cancel();
    const remaining = term.renewedAt + this.options.timing.renewDeadlineMs - this.options.clock.now();
    this.deadlineTimer = this.options.clock.setTimeout(() => {
      if (this.term === term && this.mode === 'holding') this.stepDown('renew-deadline');
    }, remaining);
  }

  private stepDown(reason: LeaseLossReason): void {
    const term = this.term!;
    this.cancelTimers();
    this.term = undefined;
    this.mode = this.options.once ? 'stopped' : 'acquiring';
    if (this.options.once) this.unsubscribe?.();
    this.options.logger.warn({ key: this.options.key, identity: this.options.identity, fencingToken: term.fencingToken, reason }, '[rollcall] lost the lease');
    this.emit('lost', { fencingToken: term.fencingToken, reason });
    // Free the record if we still can, so the next holder need not wait out the lease.
    if (reason === 'renew-deadline' || reason === 'connection-lost') void this.free(term);
    if (this.mode === 'acquiring') this.schedule(this.options.timing.retryPeriodMs);
  }

  private async free(term: Term): Promise<void> {
    const now = formatMicroTime(this.options.clock.wallNow());
    try {
      await this.options.store.update(this.options.key, { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: term.own.record.leaseTransitions }, term.own.version);
    } catch (err) {
      this.options.logger.debug({ err, key: this.options.key }, '[rollcall] could not free the record; it expires after its lease');
    }
  }

  private cancelTimers(): void {
    this.attemptTimer?.cancel();
    this.deadlineTimer?.cancel();
    this.attemptTimer = this.deadlineTimer = undefined;
  }
}
