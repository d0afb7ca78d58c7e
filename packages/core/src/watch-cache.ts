import { ClosedError } from './errors.js';
import { ClaimHandle, contains, type Claim, type Scope, scopeCovers, ScopeWatch, type ScopeSink, type ScopeWatchOptions } from './scope-watch.js';
import type { CorruptEntry, RecordKey, RecordList, StoredRecord } from './store.js';

export type { Claim, Scope } from './scope-watch.js';

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

/** How current the cache is for one key: `live` while the watch that covers it is up. @internal */
export interface Sight {
  live: boolean;
  /** This process's monotonic time when that watch last went from blind to live. */
  liveSince: number;
}

/** @internal */
export interface WatchCacheOptions extends ScopeWatchOptions {
  /** Called with each corrupt entry when it is first seen. */
  onCorrupt: (entry: CorruptEntry) => void;
}

/**
 * The records this process reads, kept current by one list-then-watch per
 * scope it claims — the roles it lists or watches, the elections and locks it
 * holds or observes — shared by every view, election and lock of the process.
 * Nothing else of the cluster reaches it: a process that only announces
 * watches nothing. A claim on a scope that an open one already covers costs
 * nothing more; a wider one replaces the narrower scopes under it once its
 * first list is in.
 * @internal
 */
export class WatchCache implements ScopeSink {
  private readonly entries = new Map<RecordKey, CacheEntry>();
  private readonly scopes = new Map<Scope, ScopeWatch>();
  private readonly listeners = new Set<{ prefix: string; listener: CacheListener }>();
  /** Listeners of one exact key (every election and lock holder): found by lookup, not by scanning every listener on every change. */
  private readonly keyListeners = new Map<RecordKey, Set<CacheListener>>();
  private readonly liveListeners = new Set<(scope: Scope) => void>();
  /** Wider scopes not listed yet, and the narrower ones each will replace (frozen meanwhile). */
  private readonly replacing = new Map<ScopeWatch, ScopeWatch[]>();
  private closed = false;

  constructor(private readonly options: WatchCacheOptions) {}

  /** Keeps `scope` listed and watched until the claim is released. */
  claim(scope: Scope): Claim {
    if (this.closed) throw new ClosedError('the registry is closed');
    let watch = [...this.scopes.values()].find((w) => contains(w.scope, scope));
    if (!watch) {
      const replaced = [...this.scopes.values()].filter((w) => contains(scope, w.scope));
      const created: ScopeWatch = new ScopeWatch(scope, this, this.options, () => {
        // Its keys are the new scope's now: the narrower watches end, their claims move over.
        for (const old of replaced) {
          if (this.scopes.get(old.scope) !== old) continue;
          this.scopes.delete(old.scope);
          old.handOver(created);
          // A wider scope still waiting to list that this one replaces: what it was replacing is handed over above too.
          this.replacing.delete(old);
        }
        this.replacing.delete(created);
      });
      for (const old of replaced) old.freeze();
      this.replacing.set(created, replaced);
      watch = created;
      this.scopes.set(scope, watch);
      watch.start();
    }
    const claim = new ClaimHandle(watch, (c) => this.release(c));
    watch.claims.add(claim);
    return claim;
  }

  private release(claim: ClaimHandle): void {
    const watch = claim.watch;
    watch.claims.delete(claim);
    if (watch.claims.size > 0 || this.scopes.get(watch.scope) !== watch) return;
    // A frozen scope a wider one is about to replace: it goes with the hand-over.
    if ([...this.replacing.values()].some((olds) => olds.includes(watch))) return;
    watch.close();
    this.scopes.delete(watch.scope);
    const frozen = this.replacing.get(watch) ?? [];
    this.replacing.delete(watch);
    // Nobody holds these keys any more: they leave quietly, as they were never read — but for those a narrower scope still holds.
    for (const key of [...this.entries.keys()]) if (scopeCovers(watch.scope, key) && !frozen.some((o) => o.claims.size > 0 && scopeCovers(o.scope, key))) this.entries.delete(key);
    for (const old of frozen) {
      if (old.claims.size > 0) old.thaw();
      else {
        old.close();
        this.scopes.delete(old.scope);
        for (const key of [...this.entries.keys()]) if (scopeCovers(old.scope, key)) this.entries.delete(key);
      }
    }
  }

  get(key: RecordKey): CacheEntry | undefined {
    return this.entries.get(key);
  }

  /** Every entry whose key starts with `prefix`. */
  list(prefix: string): CacheEntry[] {
    return [...this.entries.values()].filter((e) => e.key.startsWith(prefix));
  }

  /**
   * Whether the watch that covers `key` is up: while it is down the cache may
   * be missing changes, so an unchanged record proves nothing about its holder.
   * A key no claim covers is never live.
   */
  sight(key: RecordKey): Sight {
    for (const w of this.scopes.values()) if (scopeCovers(w.scope, key)) return { live: w.live, liveSince: w.liveSince };
    return { live: false, liveSince: 0 };
  }

  /** Calls `listener` with the scope whenever one goes from blind to live; returns the unsubscribe function. */
  onLive(listener: (scope: Scope) => void): () => void {
    this.liveListeners.add(listener);
    return () => this.liveListeners.delete(listener);
  }

  /** @internal Called by a scope's watch. */
  wentLive(scope: Scope): void {
    for (const listener of [...this.liveListeners]) listener(scope);
  }

  /**
   * The backend stopped answering this process. Its watches may not have said
   * so (a client that resumes by itself), so each counts as blind until it
   * delivers again or, once {@link sighted}, has lasted without error.
   */
  blind(): void {
    for (const w of this.scopes.values()) w.blind();
  }

  /** The backend answers again: each watch is trusted as after a resume. */
  sighted(): void {
    for (const w of this.scopes.values()) w.sighted();
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
    for (const w of this.scopes.values()) w.close();
    this.scopes.clear();
  }

  /** @internal Replaces what the cache holds of `scope` by a snapshot of it, emitting only what differs. */
  apply(scope: Scope, list: RecordList): void {
    const seen = new Set<RecordKey>();
    for (const stored of list.records) {
      if (!scopeCovers(scope, stored.key)) continue;
      seen.add(stored.key);
      this.put(stored, undefined);
    }
    for (const corrupt of list.corrupt) {
      if (!scopeCovers(scope, corrupt.key)) continue;
      seen.add(corrupt.key);
      this.put(undefined, corrupt);
    }
    for (const key of [...this.entries.keys()]) if (scopeCovers(scope, key) && !seen.has(key)) this.remove(key);
  }

  /** @internal */
  put(stored: StoredRecord | undefined, corrupt: CorruptEntry | undefined): void {
    const key = (stored ?? corrupt)!.key;
    const version = (stored ?? corrupt)!.version;
    const previous = this.entries.get(key);
    if (previous && previous.version === version) return;
    const entry: CacheEntry = { key, version, stored, corrupt, observedAt: this.options.clock.now() };
    this.entries.set(key, entry);
    if (corrupt && previous?.corrupt === undefined) this.options.onCorrupt(corrupt);
    this.notify(key, previous ? { type: 'updated', entry, previous } : { type: 'added', entry });
  }

  /** @internal */
  remove(key: RecordKey): void {
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
