import { randomBytes } from 'node:crypto';
import type { Clock } from './clock.js';
import type { RegistryConfig } from './config/registry-config.js';
import { LockHandle } from './distributed-lock.js';
import { AbortedError, ClosedError, InvalidArgumentError, LockTimeoutError } from './errors.js';
import { LeaderObserver } from './leader-observer.js';
import { LeaseDirectory, leasesNow } from './lease-directory.js';
import { LeaseHolder } from './lease-holder.js';
import type { LeaseInfo, LeaseListener } from './lease-info.js';
import { Leadership } from './leadership.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import { assertIdentity, assertName } from './names.js';
import { electionKey, lockKey, REAPER_ELECTION_PREFIX } from './record-key.js';
import type { RegistryEmit } from './registry-events.js';
import { ScopeClaims } from './scope-claims.js';
import type { WatchCache } from './watch-cache.js';

/** What `lock()` takes. */
export interface LockOptions {
  /** Give up with LOCK_TIMEOUT after this many milliseconds. Default: wait until acquired. */
  timeoutMs?: number;
  /** Give up with ABORTED when this aborts. */
  signal?: AbortSignal;
}

/** What the elections and locks side of a registry works with. @internal */
export interface RegistryLeasesOptions {
  config: RegistryConfig;
  store: MonitoredStore;
  cache: WatchCache;
  clock: Clock;
  logger: Logger;
  /** The backend's name, for errors. */
  backend(): string;
  emit: RegistryEmit;
}

/**
 * The elections and locks side of a registry: the leases this process holds
 * (one algorithm, {@link LeaseHolder}), the elections it observes and the
 * views of every election and lock. The registry checks it is open (and
 * writable) before each call.
 * @internal
 */
export class RegistryLeases {
  private readonly holders = new Set<LeaseHolder>();
  private readonly campaigns = new Set<string>();
  private readonly observers = new Set<LeaderObserver>();
  /** Pending `lock()` waits; `endWaits()` ends each with CLOSED. */
  private readonly lockWaiters = new Set<() => void>();
  /** Scopes a snapshot read (`elections()`, `locks()`): watched until close. */
  private readonly kept: ScopeClaims;
  private lockSeq = 0;
  private readonly lockPrefix = randomBytes(3).toString('hex');
  /** Made by the first watch: a registry that never watches every election or lock keeps no view of them, nor timers. */
  private electionDirectory: LeaseDirectory | undefined;
  private lockDirectory: LeaseDirectory | undefined;

  constructor(private readonly options: RegistryLeasesOptions) {
    this.kept = new ScopeClaims(options.cache);
  }

  async elections(): Promise<LeaseInfo[]> {
    await this.kept.ready('election/');
    return leasesNow('election', this.options.cache, this.options.clock.now());
  }

  async locks(): Promise<LeaseInfo[]> {
    await this.kept.ready('lock/');
    return leasesNow('lock', this.options.cache, this.options.clock.now());
  }

  /** Calls `listener` with every current election or lock, then with each change; returns the unsubscribe function. */
  watch(kind: 'election' | 'lock', listener: LeaseListener): () => void {
    if (typeof listener !== 'function') throw new InvalidArgumentError(`watch${kind === 'election' ? 'Elections' : 'Locks'}() needs a listener function`);
    const directory = this.leases(kind);
    for (const lease of directory.list()) listener({ type: 'added', lease });
    return directory.subscribe(listener);
  }

  private leases(kind: 'election' | 'lock'): LeaseDirectory {
    if (kind === 'election') return (this.electionDirectory ??= new LeaseDirectory({ kind, ...this.trackerOptions() }));
    return (this.lockDirectory ??= new LeaseDirectory({ kind, ...this.trackerOptions() }));
  }

  /** What every view of elections and locks shares: the cache, a read to confirm an expiry, and its retry delay. */
  private trackerOptions() {
    const { cache, store, clock, logger, config } = this.options;
    return { cache, store, clock, logger, retryMs: Math.min(config.election.retryPeriodMs, config.lock.retryPeriodMs) };
  }

  campaign(election: string, identity: string): Leadership {
    assertName('election', election);
    assertIdentity('identity', identity);
    if (election.startsWith(REAPER_ELECTION_PREFIX)) throw new InvalidArgumentError(`election ${JSON.stringify(election)} is reserved: names starting ${REAPER_ELECTION_PREFIX} elect the member reapers of registry.member.liveness=reaper`);
    const id = `${election}\u0000${identity}`;
    if (this.campaigns.has(id)) throw new InvalidArgumentError(`${identity} is already campaigning for ${election} in this registry`);
    const holder = this.holder(electionKey(election), identity, 'election');
    this.campaigns.add(id);
    const leadership = new Leadership(election, identity, holder, this.options.logger, () => this.campaigns.delete(id));
    leadership.on('elected', (e) => this.options.emit('elected', e));
    leadership.on('lost', (e) => this.options.emit('leadershipLost', e));
    leadership.on('error', () => this.campaigns.delete(id));
    holder.start();
    return leadership;
  }

  observe(election: string): LeaderObserver {
    assertName('election', election);
    const observer = new LeaderObserver(election, { key: electionKey(election), ...this.trackerOptions() });
    this.observers.add(observer);
    return observer;
  }

  async lock(name: string, options: LockOptions): Promise<LockHandle> {
    assertName('lock', name);
    const { timeoutMs, signal } = options;
    if (timeoutMs !== undefined && (!Number.isFinite(timeoutMs) || timeoutMs < 0)) throw new InvalidArgumentError(`timeoutMs must be a non-negative number of milliseconds, got ${timeoutMs}`);
    if (signal?.aborted) throw new AbortedError(`waiting for lock ${name} was aborted`, { cause: signal.reason });
    const holder = this.holder(lockKey(name), this.lockIdentity(), 'lock');
    return new Promise<LockHandle>((resolve, reject) => {
      const giveUp = (error: Error) => {
        offAcquired();
        offFailed();
        signal?.removeEventListener('abort', onAbort);
        this.lockWaiters.delete(onClose);
        void holder.stop('released').finally(() => reject(error));
      };
      // close() stops the holder without an acquisition; the wait must end with it rather than hang.
      const onClose = () => {
        timer?.cancel();
        giveUp(new ClosedError(`the registry closed while waiting for lock ${name}`, { backend: this.options.backend() }));
      };
      this.lockWaiters.add(onClose);
      const onAbort = () => {
        timer?.cancel();
        giveUp(new AbortedError(`waiting for lock ${name} was aborted`, { cause: signal!.reason }));
      };
      const timer = timeoutMs === undefined ? undefined : this.options.clock.setTimeout(() => giveUp(new LockTimeoutError(`lock ${name} was not acquired within ${timeoutMs} ms`)), timeoutMs);
      const offAcquired = holder.once('acquired', ({ fencingToken }) => {
        timer?.cancel();
        signal?.removeEventListener('abort', onAbort);
        this.lockWaiters.delete(onClose);
        offFailed();
        resolve(this.lockHandle(name, fencingToken, holder));
      });
      // PERMISSION_DENIED and the like: waiting longer cannot help.
      const offFailed = holder.once('failed', ({ error }) => {
        timer?.cancel();
        giveUp(error);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      holder.start();
    });
  }

  async tryLock(name: string): Promise<LockHandle | undefined> {
    assertName('lock', name);
    const holder = this.holder(lockKey(name), this.lockIdentity(), 'lock');
    let acquired: boolean;
    try {
      acquired = await holder.tryOnce();
    } finally {
      if (!holder.isHolding) this.holders.delete(holder);
    }
    // Read last before the handle is handed out: a pause since tryOnce() judged the term may have ended it.
    const fencingToken = acquired ? holder.fencingToken : undefined;
    if (fencingToken !== undefined) return this.lockHandle(name, fencingToken, holder);
    if (acquired) await holder.stop('released'); // never announced: frees the record for the next holder
    return undefined;
  }

  /**
   * A holder of `key`'s lease as `identity`, for the caller to start: every
   * holder is the registry's, so a lost connection and close() reach it.
   */
  holder(key: string, identity: string, kind: 'election' | 'lock'): LeaseHolder {
    const { config, store, cache, clock, logger } = this.options;
    const holder = new LeaseHolder({ key, identity, timing: kind === 'election' ? config.election : config.lock, store, cache, clock, logger, once: kind === 'lock' });
    this.holders.add(holder);
    if (kind === 'lock') holder.on('lost', () => this.holders.delete(holder));
    return holder;
  }

  /** The connection is lost: every holder stops counting on its lease. */
  connectionLost(): void {
    this.holders.forEach((h) => h.connectionLost());
  }

  /** Ends every pending `lock()` wait with CLOSED. */
  endWaits(): void {
    [...this.lockWaiters].forEach((onClose) => onClose());
  }

  /** Resigns every election and releases every lock. */
  stopHolders(): Promise<void>[] {
    return [...this.holders].map((h) => h.stop('closed'));
  }

  closeObservers(): void {
    this.observers.forEach((o) => o.close());
  }

  /** Closes the views of every election and lock. */
  closeViews(): void {
    this.electionDirectory?.close();
    this.lockDirectory?.close();
  }

  releaseKept(): void {
    this.kept.release();
  }

  private lockIdentity(): string {
    // Each hold has its own identity, so two waiters in one process exclude each other too.
    return `${this.options.config.identity}.${this.lockPrefix}${(++this.lockSeq).toString(36)}`;
  }

  private lockHandle(name: string, fencingToken: number, holder: LeaseHolder): LockHandle {
    const handle = new LockHandle(name, fencingToken, holder, () => this.holders.delete(holder));
    holder.once('lost', ({ reason }) => this.options.emit('lockLost', { name, fencingToken, reason }));
    this.options.emit('lockAcquired', { name, fencingToken });
    return handle;
  }
}
