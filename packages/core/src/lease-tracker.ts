import type { Clock, Timer } from './clock.js';
import { confirmByRead } from './expiry.js';
import { judgeLease, sameHolder, type LeaseInfo } from './lease-info.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey } from './store.js';
import type { WatchCache } from './watch-cache.js';

/** @internal */
export interface LeaseTrackerOptions {
  key: RecordKey;
  /** The election's or lock's name. */
  name: string;
  cache: WatchCache;
  store: Pick<MonitoredStore, 'get'>;
  clock: Clock;
  logger: Logger;
  /** Delay before asking the backend again when it could not confirm an expiry. Milliseconds. */
  retryMs: number;
  /**
   * Called when the lease appears (`previous` undefined), goes (`lease`
   * undefined: no record, or one that cannot be decoded) or changes holder or
   * term; `reason` says how the holder changed. Renewals are not changes.
   */
  onChange(lease: LeaseInfo | undefined, previous: LeaseInfo | undefined, reason: 'acquired' | 'released' | 'expired'): void;
}

/**
 * One election or lock as this process sees it, from the shared cache, judged
 * by `judgeLease`: again when its record changes (`evaluate()`), when its
 * holder's lease runs out (a timer) and when the cache sees again. A holder
 * whose lease ran out is reported expired only once a read confirms the record
 * is still the version this process last saw ({@link confirmByRead}), so a view that is merely stale
 * (a watch silently behind, a backend that has not noticed it is cut off)
 * reports no phantom expiry — as members are removed only by a confirming
 * compare-and-set delete.
 * @internal
 */
export class LeaseTracker {
  private current: LeaseInfo | undefined;
  private timer: Timer | undefined;
  /** The version a read found unchanged past its lease: its holder has expired. */
  private expiredVersion: string | undefined;
  /** The version a read is confirming. */
  private confirming: string | undefined;
  /** A read found the record written since the version the cache has: its holder gets a whole lease from then. */
  private aliveSince = 0;
  private closed = false;

  constructor(private readonly options: LeaseTrackerOptions) {}

  /** The lease as last judged; undefined without a readable record. */
  get lease(): LeaseInfo | undefined {
    return this.current;
  }

  evaluate(): void {
    if (this.closed) return;
    this.timer?.cancel();
    this.timer = undefined;
    const { key, name, cache, clock } = this.options;
    const entry = cache.get(key);
    const judged = entry && judgeLease(name, entry, cache.sight(key), clock.now(), this.aliveSince);
    let next = judged?.lease;
    if (judged) {
      if (judged.expiresInMs !== undefined) this.timer = clock.setTimeout(() => this.evaluate(), judged.expiresInMs + 1);
      if (judged.named && !judged.lease.holder && entry!.version !== this.expiredVersion) {
        // Ran out by this process's clock: the holder stands until the backend confirms.
        next = { ...judged.lease, holder: judged.named };
        this.confirm(entry!.version);
      }
    }
    const previous = this.current;
    this.current = next;
    if (next && previous && sameHolder(previous.holder, next.holder)) return;
    if (!next && !previous) return;
    this.options.onChange(next, previous, next?.holder ? 'acquired' : judged?.named ? 'expired' : 'released');
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
  }

  private confirm(version: string): void {
    if (this.confirming === version) return;
    this.confirming = version;
    confirmByRead(this.options.store, this.options.key, version).then(
      (confirmation) => {
        if (this.closed || this.confirming !== version) return;
        this.confirming = undefined;
        if (confirmation === 'confirmed') this.expiredVersion = version;
        // Written (or deleted) since: the cache is behind, and its watch brings the change.
        else this.aliveSince = this.options.clock.now();
        this.evaluate();
      },
      (err: unknown) => {
        if (this.closed || this.confirming !== version) return;
        this.confirming = undefined;
        this.options.logger.debug({ err, key: this.options.key }, '[rollcall] could not confirm an expired holder; trying again');
        this.timer?.cancel();
        this.timer = this.options.clock.setTimeout(() => this.evaluate(), this.options.retryMs);
      },
    );
  }
}
