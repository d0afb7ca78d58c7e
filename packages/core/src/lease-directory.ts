import type { Clock, Timer } from './clock.js';
import { judgeLease, sameHolder, type LeaseEvent, type LeaseInfo, type LeaseListener } from './lease-info.js';
import type { Logger } from './logger.js';
import { parseKey, type RecordKind } from './record-key.js';
import type { RecordKey } from './store.js';
import type { CacheChange, CacheEntry, WatchCache } from './watch-cache.js';

const byName = (a: LeaseInfo, b: LeaseInfo) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Every election, or every lock, in the cache, sorted by name, its holder judged
 * by the clock now (not when a timer last ran).
 * @internal
 */
export function leasesNow(kind: Extract<RecordKind, 'election' | 'lock'>, cache: WatchCache, now: number): LeaseInfo[] {
  return cache
    .list(`${kind}/`)
    .flatMap((entry) => {
      const parsed = parseKey(entry.key);
      const judged = parsed?.kind === kind ? judgeLease(parsed.name, entry, cache, now) : undefined;
      return judged ? [judged.lease] : [];
    })
    .sort(byName);
}

interface Known {
  lease: LeaseInfo;
  expiryTimer: Timer | undefined;
}

/**
 * Every election, or every lock, of the cluster as this process sees it,
 * derived from the shared cache: no calls to the backend. A holder whose record
 * stops changing for its lease, by this process's clock, is reported expired
 * (by the rule of `judgeLease`, as `observe()` reports a leader gone).
 * @internal
 */
export class LeaseDirectory {
  private readonly known = new Map<RecordKey, Known>();
  private readonly listeners = new Set<LeaseListener>();
  private readonly unsubscribe: () => void;
  private readonly offLive: () => void;

  constructor(
    private readonly kind: Extract<RecordKind, 'election' | 'lock'>,
    private readonly cache: WatchCache,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    const prefix = `${kind}/`;
    for (const entry of cache.list(prefix)) this.evaluate(entry.key);
    this.unsubscribe = cache.subscribe(prefix, (change) => this.evaluate(keyOf(change)));
    this.offLive = cache.onLive(() => [...this.known.keys()].forEach((key) => this.evaluate(key)));
  }

  /** Every one with a record, sorted by name, as the last event said. */
  list(): LeaseInfo[] {
    return [...this.known.values()].map((k) => k.lease).sort(byName);
  }

  /** Calls `listener` for each change; returns the unsubscribe function. */
  subscribe(listener: LeaseListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.unsubscribe();
    this.offLive();
    for (const known of this.known.values()) known.expiryTimer?.cancel();
    this.known.clear();
    this.listeners.clear();
  }

  private evaluate(key: RecordKey): void {
    const parsed = parseKey(key);
    if (!parsed || parsed.kind !== this.kind) return;
    const previous = this.known.get(key);
    previous?.expiryTimer?.cancel();
    const entry: CacheEntry | undefined = this.cache.get(key);
    // A corrupt record says nothing about a holder: it is left out until it is fixed or replaced.
    const judged = entry && judgeLease(parsed.name, entry, this.cache, this.clock.now());
    if (!judged) {
      if (!previous) return;
      this.known.delete(key);
      this.emit({ type: 'removed', lease: previous.lease });
      return;
    }
    const { lease, expiresInMs } = judged;
    // Just past the end: a timer may fire a little early by now(), and would only have to be armed again.
    const expiryTimer = expiresInMs === undefined ? undefined : this.clock.setTimeout(() => this.evaluate(key), expiresInMs + 1);
    this.known.set(key, { lease, expiryTimer });
    if (!previous) this.emit({ type: 'added', lease });
    else if (!sameHolder(previous.lease.holder, lease.holder)) {
      const reason = lease.holder ? 'acquired' : entry!.stored!.record.holderIdentity === '' ? 'released' : 'expired';
      this.emit({ type: 'changed', lease, previous: previous.lease, reason });
    }
  }

  private emit(event: LeaseEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (err) {
        this.logger.error({ err }, `[rollcall] a ${this.kind} listener threw`);
      }
    }
  }
}

function keyOf(change: CacheChange): RecordKey {
  return change.type === 'removed' ? change.previous.key : change.entry.key;
}
