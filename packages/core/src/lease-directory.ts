import type { Clock } from './clock.js';
import { judgeLease, type LeaseEvent, type LeaseInfo, type LeaseListener } from './lease-info.js';
import { LeaseTracker } from './lease-tracker.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import { parseKey, type RecordKind } from './record-key.js';
import type { RecordKey } from './store.js';
import type { Claim, WatchCache } from './watch-cache.js';

const byName = (a: LeaseInfo, b: LeaseInfo) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Every election, or every lock, in the cache, sorted by name, its holder judged
 * by the clock now (not when a timer last ran); a snapshot, so an expiry in it
 * is not confirmed with the backend as the watches confirm one.
 * @internal
 */
export function leasesNow(kind: Extract<RecordKind, 'election' | 'lock'>, cache: WatchCache, now: number): LeaseInfo[] {
  return cache
    .list(`${kind}/`)
    .flatMap((entry) => {
      const parsed = parseKey(entry.key);
      const judged = parsed?.kind === kind ? judgeLease(parsed.name, entry, cache.sight(entry.key), now) : undefined;
      return judged ? [judged.lease] : [];
    })
    .sort(byName);
}

/** @internal */
export interface LeaseDirectoryOptions {
  kind: Extract<RecordKind, 'election' | 'lock'>;
  cache: WatchCache;
  store: Pick<MonitoredStore, 'get'>;
  clock: Clock;
  logger: Logger;
  /** Delay before asking the backend again when it could not confirm an expiry. Milliseconds. */
  retryMs: number;
}

/**
 * Every election, or every lock, of the cluster as this process sees it, from
 * the shared cache, one LeaseTracker per record: a holder is reported expired
 * by the same rule as `observe()` reports a leader gone.
 * @internal
 */
export class LeaseDirectory {
  private readonly trackers = new Map<RecordKey, LeaseTracker>();
  private readonly listeners = new Set<LeaseListener>();
  private readonly unsubscribe: () => void;
  private readonly offLive: () => void;
  /** Every election, or every lock, stays watched while the directory is open. */
  readonly claim: Claim;

  constructor(private readonly options: LeaseDirectoryOptions) {
    const { cache, kind } = options;
    const prefix = `${kind}/`;
    this.claim = cache.claim(prefix);
    for (const entry of cache.list(prefix)) this.evaluate(entry.key);
    this.unsubscribe = cache.subscribe(prefix, (change) => this.evaluate(change.type === 'removed' ? change.previous.key : change.entry.key));
    this.offLive = cache.onLive(() => [...this.trackers.values()].forEach((t) => t.evaluate()));
  }

  /** Every one with a record, sorted by name, as the last event said. */
  list(): LeaseInfo[] {
    return [...this.trackers.values()].flatMap((t) => (t.lease ? [t.lease] : [])).sort(byName);
  }

  /** Calls `listener` for each change; returns the unsubscribe function. */
  subscribe(listener: LeaseListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.claim.release();
    this.unsubscribe();
    this.offLive();
    this.trackers.forEach((t) => t.close());
    this.trackers.clear();
    this.listeners.clear();
  }

  private evaluate(key: RecordKey): void {
    const parsed = parseKey(key);
    if (!parsed || parsed.kind !== this.options.kind) return;
    let tracker = this.trackers.get(key);
    if (!tracker) {
      tracker = new LeaseTracker({ ...this.options, key, name: parsed.name, onChange: (lease, previous, reason) => this.onChange(key, lease, previous, reason) });
      this.trackers.set(key, tracker);
    }
    tracker.evaluate();
    // A key with no readable record keeps no tracker.
    if (!tracker.lease) {
      tracker.close();
      this.trackers.delete(key);
    }
  }

  private onChange(key: RecordKey, lease: LeaseInfo | undefined, previous: LeaseInfo | undefined, reason: 'acquired' | 'released' | 'expired'): void {
    if (!lease) this.emit({ type: 'removed', lease: previous! });
    else if (!previous) this.emit({ type: 'added', lease });
    else this.emit({ type: 'changed', lease, previous, reason });
  }

  private emit(event: LeaseEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (err) {
        this.options.logger.error({ err }, `[rollcall] a ${this.options.kind} listener threw`);
      }
    }
  }
}
