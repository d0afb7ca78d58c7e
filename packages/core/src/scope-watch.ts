import { Backoff } from './backoff.js';
import type { Clock, Timer } from './clock.js';
import { ClosedError, ErrorCode, RegistryError } from './errors.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import type { CorruptEntry, RecordKey, RecordList, ScopeOptions, StoredRecord, WatchEvent, WatchSubscription } from './store.js';

/**
 * What a claim keeps watched: a prefix that ends in `/` (`member/worker/`,
 * `election/`; `''` is the whole cluster), or else exactly one record key
 * (`election/scheduler`). Two scopes either nest or share no key.
 * @internal
 */
export type Scope = string;

/** Whether `scope` names one key rather than every key under a prefix. */
export const isExact = (scope: Scope) => scope !== '' && !scope.endsWith('/');

/** Whether `key` is one `scope` holds. */
export function scopeCovers(scope: Scope, key: RecordKey): boolean {
  return isExact(scope) ? key === scope : key.startsWith(scope);
}

/** Whether every key of `inner` is one of `outer`'s. */
export const contains = (outer: Scope, inner: Scope) => (isExact(outer) ? outer === inner : inner.startsWith(outer));

/** A hold on a scope: while any claim on it is open, the cache lists and watches it. @internal */
export interface Claim {
  /** Resolves once the scope's records are in the cache; rejects with the error of a list that failed before that (the cache keeps trying). */
  ready(): Promise<void>;
  /** Whether the scope's records are in the cache now. */
  readonly listed: boolean;
  /** Ends the hold. Idempotent. */
  release(): void;
}

/** How a scope's watch lists, watches and retries. @internal */
export interface ScopeWatchOptions {
  store: MonitoredStore;
  clock: Clock;
  logger: Logger;
  /** First delay before re-watching after a failed watch. Milliseconds. Doubles (less up to 20 % jitter) up to `maxRetryDelayMs`. */
  retryDelayMs: number;
  maxRetryDelayMs: number;
  /** A watch that has run this long without error counts as established, for stores that do not say so with a progress event. Milliseconds; longer than a call's timeout. */
  trustWatchAfterMs: number;
}

/** Where a scope's watch puts what it lists and sees: the watch cache. @internal */
export interface ScopeSink {
  /** A first list or a relist of `scope`: the cache applies only the difference. */
  apply(scope: Scope, list: RecordList): void;
  put(stored: StoredRecord | undefined, corrupt: CorruptEntry | undefined): void;
  remove(key: RecordKey): void;
  /** The watch of `scope` went from blind to live. */
  wentLive(scope: Scope): void;
}

/** One claim's handle; its watch moves to a wider scope that absorbs it. */
export class ClaimHandle implements Claim {
  released = false;
  constructor(
    public watch: ScopeWatch,
    private readonly onRelease: (claim: ClaimHandle) => void,
  ) {}
  get listed(): boolean {
    return this.watch.listed;
  }
  ready(): Promise<void> {
    return this.watch.whenListed();
  }
  release(): void {
    if (this.released) return;
    this.released = true;
    this.onRelease(this);
  }
}

/**
 * One list-then-watch of one scope. It resumes from its revision after a
 * broken watch, relists when that revision is too old, and then applies only
 * the difference, so subscribers see no lost and no phantom changes.
 */
export class ScopeWatch {
  readonly claims = new Set<ClaimHandle>();
  listed = false;
  live = false;
  liveSince = 0;
  private revision: string | undefined;
  private subscription: WatchSubscription | undefined;
  private retryTimer: Timer | undefined;
  private liveTimer: Timer | undefined;
  private readonly backoff: Backoff;
  private generation = 0;
  private closed = false;
  private waiters: { resolve: () => void; reject: (err: unknown) => void }[] = [];

  /** One record: the store may ask its server for that object alone. */
  private readonly hint: ScopeOptions | undefined;

  constructor(
    readonly scope: Scope,
    private readonly cache: ScopeSink,
    private readonly options: ScopeWatchOptions,
    /** Called once the first list is in, before it is applied: the cache hands this scope the keys of the narrower scopes it replaces. */
    private readonly onFirstList: () => void,
  ) {
    this.backoff = new Backoff({ clock: options.clock, initialMs: options.retryDelayMs, maxMs: Math.max(options.retryDelayMs, options.maxRetryDelayMs) });
    this.hint = isExact(scope) ? { exact: true } : undefined;
  }

  start(): void {
    this.list();
  }

  whenListed(): Promise<void> {
    if (this.listed) return Promise.resolve();
    if (this.closed) return Promise.reject(new ClosedError('the registry is closed'));
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** The backend stopped answering: blind until the watch delivers again or, once sighted, has lasted without error. */
  blind(): void {
    this.liveTimer?.cancel();
    this.setLive(false);
  }

  sighted(): void {
    if (this.live || this.closed || !this.subscription) return;
    this.trustLater();
  }

  /**
   * Stops applying changes, blind, while a wider scope lists: no change it
   * delivers can then be newer than the wider snapshot that replaces it.
   */
  freeze(): void {
    this.generation++;
    this.subscription?.close();
    this.subscription = undefined;
    this.retryTimer?.cancel();
    this.liveTimer?.cancel();
    this.setLive(false);
  }

  /** The wider scope went away before its first list: back to work, from a fresh list. */
  thaw(): void {
    if (this.closed) return;
    this.list();
  }

  /** Its claims and waiters move to `wider`, which now holds its keys. */
  handOver(wider: ScopeWatch): void {
    for (const claim of this.claims) {
      claim.watch = wider;
      wider.claims.add(claim);
    }
    this.claims.clear();
    wider.waiters.push(...this.waiters);
    this.waiters = [];
    this.close();
  }

  close(): void {
    this.closed = true;
    this.freeze();
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.reject(new ClosedError('the registry is closed'));
  }

  private setLive(live: boolean): void {
    if (this.live === live) return;
    this.live = live;
    if (live) {
      this.liveSince = this.options.clock.now();
      this.cache.wentLive(this.scope);
    }
  }

  private list(): void {
    const generation = this.generation;
    this.options.store.list(this.scope, this.hint).then(
      (list) => {
        if (this.closed || generation !== this.generation) return;
        if (!this.listed) this.onFirstList();
        this.cache.apply(this.scope, list);
        this.listed = true;
        this.setLive(true);
        this.watchFrom(list.revision);
        const waiters = this.waiters;
        this.waiters = [];
        for (const w of waiters) w.resolve();
      },
      (error: unknown) => {
        if (this.closed || generation !== this.generation) return;
        this.options.logger.debug({ err: error, scope: this.scope }, '[rollcall] list failed; retrying');
        const waiters = this.waiters;
        this.waiters = [];
        for (const w of waiters) w.reject(error);
        this.retryTimer = this.backoff.schedule(() => this.list());
      },
    );
  }

  private watchFrom(revision: string): void {
    if (this.closed) return;
    const generation = ++this.generation;
    this.revision = revision;
    this.subscription = this.options.store.watch(this.scope, revision, {
      event: (event) => {
        if (generation !== this.generation) return;
        this.backoff.reset();
        this.onEvent(event);
      },
      error: (error) => {
        if (generation !== this.generation) return;
        this.subscription = undefined;
        this.onWatchError(error);
      },
    }, this.hint);
    // A store that does not announce an established watch: one that has lasted this long without error is trusted.
    if (!this.live) this.trustLater();
  }

  private trustLater(): void {
    const generation = this.generation;
    this.liveTimer?.cancel();
    this.liveTimer = this.options.clock.setTimeout(() => generation === this.generation && this.subscription && this.setLive(true), this.options.trustWatchAfterMs);
  }

  private onEvent(event: WatchEvent): void {
    this.revision = event.revision;
    this.setLive(true);
    // A store may send more than an exact scope asked for (its watch is by prefix).
    if (event.type === 'put' && scopeCovers(this.scope, event.record.key)) this.cache.put(event.record, undefined);
    else if (event.type === 'corrupt' && scopeCovers(this.scope, event.entry.key)) this.cache.put(undefined, event.entry);
    else if (event.type === 'delete' && scopeCovers(this.scope, event.key)) this.cache.remove(event.key);
  }

  private onWatchError(error: RegistryError): void {
    if (this.closed) return;
    this.setLive(false);
    const relist = error.code === ErrorCode.REVISION_TOO_OLD;
    this.options.logger.debug({ err: error, relist, scope: this.scope }, '[rollcall] watch ended; resuming');
    this.retryTimer = this.options.clock.setTimeout(
      () => {
        if (this.closed) return;
        if (relist) this.list();
        else this.watchFrom(this.revision!);
      },
      relist ? 0 : this.backoff.next(),
    );
  }
}

