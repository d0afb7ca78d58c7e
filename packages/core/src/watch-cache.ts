import type { Clock, Timer } from './clock.js';
import { ErrorCode, RegistryError } from './errors.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import type { CorruptEntry, RecordKey, RecordList, StoredRecord, WatchEvent, WatchSubscription } from './store.js';

/** What the cache knows of one key. @internal */
export interface CacheEntry {
  key: RecordKey;
  version: string;
  /** The decoded record; undefined when the stored value is corrupt. */
  stored: StoredRecord | undefined;
  corrupt: CorruptEntry | undefined;
  /** This process's monotonic time when it last saw the version change: the base of expiry. */
  observedAt: number;
}

/** @internal */
export type CacheChange =
  | { type: 'added'; entry: CacheEntry }
  | { type: 'updated'; entry: CacheEntry; previous: CacheEntry }
  | { type: 'removed'; previous: CacheEntry };

/** @internal */
export type CacheListener = (change: CacheChange) => void;

/** @internal */
export interface WatchCacheOptions {
  store: MonitoredStore;
  clock: Clock;
  logger: Logger;
  /** First delay before re-watching after a failed watch. Milliseconds. Doubles up to `maxRetryDelayMs`. */
  retryDelayMs: number;
  maxRetryDelayMs: number;
  /** A watch that has run this long without error counts as established, for stores that do not say so with a progress event. Milliseconds; longer than a call's timeout. */
  trustWatchAfterMs: number;
  /** Called with each corrupt entry when it is first seen. */
  onCorrupt: (entry: CorruptEntry) => void;
}

/**
 * One list-then-watch over the whole cluster, shared by every view, election
 * and lock of the process. It resumes from its revision after a broken watch,
 * relists when that revision is too old, and then emits only the difference,
 * so subscribers see no lost and no phantom changes.
 * @internal
 */
export class WatchCache {
  private readonly entries = new Map<RecordKey, CacheEntry>();
  private readonly listeners = new Set<{ prefix: string; listener: CacheListener }>();
  /** Listeners of one exact key (every election and lock holder): found by lookup, not by scanning every listener on every change. */
  private readonly keyListeners = new Map<RecordKey, Set<CacheListener>>();
  private revision: string | undefined;
  private subscription: WatchSubscription | undefined;
  private retryTimer: Timer | undefined;
  private retryDelay: number;
  private generation = 0;
  private closed = false;
  private readyPromise: Promise<void> | undefined;
  private isLive = true;
  private liveAt = 0;
  private liveTimer: Timer | undefined;
  private readonly liveListeners = new Set<() => void>();

  constructor(private readonly options: WatchCacheOptions) {
    this.retryDelay = options.retryDelayMs;
  }

  /** Lists and starts watching; resolves once the first list is in. Rejects if that list fails. */
  start(): Promise<void> {
    this.readyPromise ??= this.options.store.list('').then((list) => {
      this.apply(list);
      this.watchFrom(list.revision);
    });
    return this.readyPromise;
  }

  get(key: RecordKey): CacheEntry | undefined {
    return this.entries.get(key);
  }

  /** Every entry whose key starts with `prefix`. */
  list(prefix: string): CacheEntry[] {
    return [...this.entries.values()].filter((e) => e.key.startsWith(prefix));
  }

  /**
   * False while the watch is down: the cache may be missing changes, so an
   * unchanged record proves nothing about its holder. True again once the
   * resumed watch delivers or a relist lands.
   */
  get live(): boolean {
    return this.isLive;
  }

  /** This process's monotonic time when the cache last went from blind to live; 0 if it never was blind. */
  get liveSince(): number {
    return this.liveAt;
  }

  /** Calls `listener` whenever the cache goes from blind to live; returns the unsubscribe function. */
  onLive(listener: () => void): () => void {
    this.liveListeners.add(listener);
    return () => this.liveListeners.delete(listener);
  }

  private setLive(live: boolean): void {
    if (this.isLive === live) return;
    this.isLive = live;
    if (live) this.liveAt = this.options.clock.now();
    if (live) for (const listener of [...this.liveListeners]) listener();
  }

  /**
   * The backend stopped answering this process. Its watch may not have said so
   * (a client that resumes by itself), so the cache counts as blind until the
   * watch delivers again or, once {@link sighted}, has lasted without error.
   */
  blind(): void {
    this.liveTimer?.cancel();
    this.setLive(false);
  }

  /** The backend answers again: the watch is trusted as after a resume. */
  sighted(): void {
    if (this.isLive || this.closed || !this.subscription) return;
    this.trustLater();
  }

  /** Calls `listener` for each change of exactly `key`; returns the unsubscribe function. */
  watchKey(key: RecordKey, listener: CacheListener): () => void {
    let set = this.keyListeners.get(key);
    if (!set) this.keyListeners.set(key, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.keyListeners.get(key) === set) this.keyListeners.delete(key);
    };
  }

  /** Calls `listener` for each change under `prefix`; returns the unsubscribe function. */
  subscribe(prefix: string, listener: CacheListener): () => void {
    const item = { prefix, listener };
    this.listeners.add(item);
    return () => this.listeners.delete(item);
  }

  close(): void {
    this.closed = true;
    this.generation++;
    this.subscription?.close();
    this.retryTimer?.cancel();
    this.liveTimer?.cancel();
  }

  private watchFrom(revision: string): void {
    if (this.closed) return;
    const generation = ++this.generation;
    this.revision = revision;
    this.subscription = this.options.store.watch('', revision, {
      event: (event) => {
        if (generation !== this.generation) return;
        this.retryDelay = this.options.retryDelayMs;
        this.onEvent(event);
      },
      error: (error) => {
        if (generation !== this.generation) return;
        this.subscription = undefined;
        this.onWatchError(error);
      },
    });
    // A store that does not announce an established watch: one that has lasted this long without error is trusted.
    if (!this.isLive) this.trustLater();
  }

  private trustLater(): void {
    const generation = this.generation;
    this.liveTimer?.cancel();
    this.liveTimer = this.options.clock.setTimeout(() => generation === this.generation && this.subscription && this.setLive(true), this.options.trustWatchAfterMs);
  }

  private onEvent(event: WatchEvent): void {
    this.revision = event.revision;
    this.setLive(true);
    if (event.type === 'put') this.put(event.record, undefined);
    else if (event.type === 'corrupt') this.put(undefined, event.entry);
    else if (event.type === 'delete') this.remove(event.key);
  }

  private onWatchError(error: RegistryError): void {
    if (this.closed) return;
    this.setLive(false);
    const relist = error.code === ErrorCode.REVISION_TOO_OLD;
    this.options.logger.debug({ err: error, relist }, '[rollcall] watch ended; resuming');
    this.retryTimer = this.options.clock.setTimeout(() => {
      if (this.closed) return;
      if (relist) this.relist();
      else this.watchFrom(this.revision!);
    }, relist ? 0 : this.nextDelay());
  }

  private relist(): void {
    this.options.store.list('').then(
      (list) => {
        if (this.closed) return;
        this.apply(list);
        this.setLive(true);
        this.watchFrom(list.revision);
      },
      (error: unknown) => {
        if (this.closed) return;
        this.options.logger.debug({ err: error }, '[rollcall] relist failed; retrying');
        this.retryTimer = this.options.clock.setTimeout(() => this.relist(), this.nextDelay());
      },
    );
  }

  private nextDelay(): number {
    const delay = this.retryDelay;
    this.retryDelay = Math.min(this.retryDelay * 2, this.options.maxRetryDelayMs);
    return delay;
  }

  /** Replaces the cache's content by a snapshot, emitting only what differs. */
  private apply(list: RecordList): void {
    const seen = new Set<RecordKey>();
    for (const stored of list.records) {
      seen.add(stored.key);
      this.put(stored, undefined);
    }
    for (const corrupt of list.corrupt) {
      seen.add(corrupt.key);
      this.put(undefined, corrupt);
    }
    for (const key of [...this.entries.keys()]) if (!seen.has(key)) this.remove(key);
  }

  private put(stored: StoredRecord | undefined, corrupt: CorruptEntry | undefined): void {
    const key = (stored ?? corrupt)!.key;
    const version = (stored ?? corrupt)!.version;
    const previous = this.entries.get(key);
    if (previous && previous.version === version) return;
    const entry: CacheEntry = { key, version, stored, corrupt, observedAt: this.options.clock.now() };
    this.entries.set(key, entry);
    if (corrupt && previous?.corrupt === undefined) this.options.onCorrupt(corrupt);
    this.notify(key, previous ? { type: 'updated', entry, previous } : { type: 'added', entry });
  }

  private remove(key: RecordKey): void {
    const previous = this.entries.get(key);
    if (!previous) return;
    this.entries.delete(key);
    this.notify(key, { type: 'removed', previous });
  }

  private notify(key: RecordKey, change: CacheChange): void {
    const exact = [...(this.keyListeners.get(key) ?? [])];
    const byPrefix = [...this.listeners].filter((l) => key.startsWith(l.prefix)).map((l) => l.listener);
    for (const listener of [...exact, ...byPrefix]) {
      try {
        listener(change);
      } catch (err) {
        this.options.logger.error({ err, key }, '[rollcall] a cache listener threw');
      }
    }
  }
}
