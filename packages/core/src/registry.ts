import { randomBytes } from 'node:crypto';
import { BackendActivityReporter, bindBackendActivity } from './backend-activity.js';
import { systemClock, type Clock } from './clock.js';
import type { RegistryConfig } from './config/registry-config.js';
import { ConnectionMonitor, type ConnectionEvents, type ConnectionState } from './connection-monitor.js';
import { LockHandle } from './distributed-lock.js';
import { Emitter } from './emitter.js';
import { AbortedError, ClosedError, InvalidArgumentError, LockTimeoutError, PermissionError } from './errors.js';
import { LeaderObserver } from './leader-observer.js';
import { LeaseDirectory, leasesNow } from './lease-directory.js';
import { LeaseHolder, type LeaseLossReason } from './lease-holder.js';
import type { LeaseInfo, LeaseListener } from './lease-info.js';
import type { JsonValue } from './lease-record.js';
import { Leadership, type LeadershipEvents } from './leadership.js';
import { HeartbeatLiveness } from './heartbeat-liveness.js';
import { confirmByMark, confirmByReading } from './liveness-judge.js';
import { silentLogger, type Logger } from './logger.js';
import { MemberDirectory } from './member-directory.js';
import { MemberHandle } from './member-handle.js';
import type { LivenessFactory, LivenessStrategy, MemberLiveness } from './member-liveness.js';
import type { Member, MemberEvent, MemberListener } from './member.js';
import { MonitoredStore } from './monitored-store.js';
import { assertIdentity, assertName } from './names.js';
import { assertPayload } from './payload.js';
import { PodLiveness, PodRecords } from './pod-liveness.js';
import { ReaperLiveness, ReaperRecords } from './reaper-liveness.js';
import { electionKey, lockKey, memberKey, REAPER_ELECTION_PREFIX } from './record-key.js';
import { ScopeClaims } from './scope-claims.js';
import type { CorruptEntry, RecordStore } from './store.js';
import { supports } from './store-supports.js';
import { WatchCache } from './watch-cache.js';

/** Every state change of a registry, for applications and metrics. */
export interface RegistryEvents extends ConnectionEvents {
  elected: LeadershipEvents['elected'];
  leadershipLost: LeadershipEvents['lost'];
  lockAcquired: { name: string; fencingToken: number };
  lockLost: { name: string; fencingToken: number; reason: LeaseLossReason };
  memberAdded: Extract<MemberEvent, { type: 'added' }>;
  memberUpdated: Extract<MemberEvent, { type: 'updated' }>;
  memberRemoved: Extract<MemberEvent, { type: 'removed' }>;
  /** A record that cannot be decoded (edited by hand?); it is ignored until it is fixed or replaced. */
  corruptRecord: { key: string; error: CorruptEntry['error'] };
}

/** What `announce()` takes. */
export interface AnnounceOptions {
  /** The role, e.g. `worker`. */
  role: string;
  /** The member's id within the role. Default: the registry's identity. */
  id?: string;
  /** The first heartbeat's payload, plain JSON. */
  payload?: JsonValue;
}

/** What `lock()` takes. */
export interface LockOptions {
  /** Give up with LOCK_TIMEOUT after this many milliseconds. Default: wait until acquired. */
  timeoutMs?: number;
  /** Give up with ABORTED when this aborts. */
  signal?: AbortSignal;
}

/** A subscription of `watchMembers`, `watchElections` or `watchLocks`. */
export interface Subscription {
  /** Stops the calls to the listener. Idempotent. */
  close(): void;
}

/** Each `registry.member.liveness` mode's strategy. A new mode is a new entry here, not a branch in the registry. */
const LIVENESS_MODES: Record<MemberLiveness, LivenessFactory> = {
  heartbeat: (context) => new HeartbeatLiveness(new ReaperRecords(context)),
  reaper: (context) => new ReaperLiveness(context),
  pod: (context) => new PodLiveness(context, new ReaperRecords(context)),
};

/** A key no record has: reading it proves the backend answers. */
const CONNECTION_PROBE_KEY = 'probe/connection';

/** The store each registry runs on, for {@link registryStore}; not a property, so it is not part of the Registry API. */
const stores = new WeakMap<Registry, RecordStore>();

/**
 * The store `registry` runs on. For backend tests, the conformance suite and
 * operator tools (`rollcall release`): a write through it bypasses every
 * algorithm of the registry. Applications never need it.
 */
export function registryStore(registry: Registry): RecordStore {
  const store = stores.get(registry);
  if (!store) throw new InvalidArgumentError('registryStore() takes a registry made by createRegistry()');
  return store;
}

/**
 * The Registry API: membership with heartbeats, elections, locks and the
 * connection state, over one backend store. Every algorithm reads the shared
 * watch cache, which watches only what this process reads: the roles it lists
 * or watches, the elections and locks it holds or observes. Only writes and
 * the first list of each go to the backend. With
 * `registry.member.liveness=reaper`, a registry that reads a role with members
 * also campaigns to reap it (election `rollcall-reaper.<role>`, see the core
 * README, "Member liveness").
 */
export class Registry extends Emitter<RegistryEvents> {
  private readonly members_ = new Set<MemberHandle>();
  private readonly holders = new Set<LeaseHolder>();
  private readonly campaigns = new Set<string>();
  private readonly observers = new Set<LeaderObserver>();
  private readonly subscriptions = new Set<() => void>();
  /** Pending `lock()` waits; `close()` ends each with CLOSED. */
  private readonly lockWaiters = new Set<() => void>();
  private closed = false;
  /** Scopes a snapshot read (`elections()`, `locks()`): watched until close. */
  private readonly kept: ScopeClaims;
  private lockSeq = 0;
  private readonly lockPrefix = randomBytes(3).toString('hex');
  /** Made by the first watch: a registry that never watches every election or lock keeps no view of them, nor timers. */
  private electionDirectory: LeaseDirectory | undefined;
  private lockDirectory: LeaseDirectory | undefined;

  private constructor(
    /** The validated, frozen configuration. */
    readonly config: RegistryConfig,
    private readonly rawStore: RecordStore,
    private readonly store: MonitoredStore,
    private readonly cache: WatchCache,
    private readonly directory: MemberDirectory,
    /** How member liveness reaches peers (`registry.member.liveness`), chosen once here. */
    private readonly liveness: LivenessStrategy,
    /** How readers judge pod members' records, whatever the mode. */
    private readonly pods: PodRecords,
    private readonly monitor: ConnectionMonitor,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    super(logger);
    this.kept = new ScopeClaims(cache);
  }

  /**
   * Opens a registry on an already connected store: lists, starts the watch,
   * and resolves once the first list is in. Rejects (and closes the store) if
   * that fails. `createRegistry` is the way in.
   * @internal
   */
  static async open(
    store: RecordStore,
    resolved: RegistryConfig,
    /** `liveness`: a strategy to use instead of `registry.member.liveness`'s, for tests of the seam a new mode plugs into. */
    runtime: { clock?: Clock; logger?: Logger; liveness?: LivenessFactory } = {},
  ): Promise<Registry> {
    const clock = runtime.clock ?? systemClock;
    const logger = runtime.logger ?? silentLogger;
    let registry: Registry | undefined;
    let monitored: MonitoredStore;
    const monitor: ConnectionMonitor = new ConnectionMonitor({
      clock,
      logger,
      backend: store.backend,
      lostAfterMs: Math.max(resolved.election.leaseDurationMs, resolved.lock.leaseDurationMs, resolved.member.leaseDurationMs),
      probeIntervalMs: Math.min(resolved.election.retryPeriodMs, resolved.lock.retryPeriodMs),
      probe: (): Promise<unknown> => monitored.get(CONNECTION_PROBE_KEY),
    });
    monitored = new MonitoredStore(store, clock, resolved.requestTimeoutMs, monitor, new BackendActivityReporter(logger));
    const cache = new WatchCache({
      store: monitored,
      clock,
      logger,
      retryDelayMs: 100,
      maxRetryDelayMs: Math.min(resolved.election.retryPeriodMs, resolved.lock.retryPeriodMs),
      trustWatchAfterMs: 2 * resolved.requestTimeoutMs,
      onCorrupt: (entry) => registry?.emit('corruptRecord', { key: entry.key, error: entry.error }),
    });
    try {
      // Nothing is watched until something is read; one call proves the backend answers.
      await monitored.get(CONNECTION_PROBE_KEY);
    } catch (err) {
      cache.close();
      monitor.close();
      await store.close().catch(() => {});
      throw err;
    }
    let directory: MemberDirectory | undefined;
    // Elections of a liveness mode (the reapers') are the registry's holders, so a lost connection and close() reach them.
    let liveness: LivenessStrategy;
    // The one place that knows the registry may not write: its expiries are confirmed by a read, and it campaigns for nothing.
    const confirm = resolved.readOnly ? confirmByReading : confirmByMark;
    const context = {
      identity: resolved.identity,
      member: resolved.member,
      cache,
      store: monitored,
      backend: store,
      clock,
      logger,
      confirm,
      holder: resolved.readOnly ? undefined : (key: string) => registry!.holder(key, resolved.identity, 'election'),
      rejudge: (key: string) => directory?.rejudge(key),
    };
    try {
      liveness = (runtime.liveness ?? LIVENESS_MODES[resolved.member.liveness])(context);
    } catch (err) {
      // A mode this backend cannot serve (pod without pod readiness): nothing stays open.
      cache.close();
      monitor.close();
      await store.close().catch(() => {});
      throw err;
    }
    const pods = new PodRecords(context);
    directory = new MemberDirectory({ cache, store: monitored, clock, logger, retryMs: resolved.member.heartbeatIntervalMs, liveness, pods, confirm });
    registry = new Registry(resolved, store, monitored, cache, directory, liveness, pods, monitor, clock, logger);
    stores.set(registry, store);
    bindBackendActivity(registry, monitored.activity);
    registry.wire(store);
    return registry;
  }

  private wire(store: RecordStore): void {
    for (const type of ['connected', 'suspended', 'lost', 'reconnected'] as const) {
      this.monitor.on(type, (event) => this.emit(type, event as never));
    }
    this.monitor.on('lost', () => this.holders.forEach((h) => h.connectionLost()));
    this.monitor.on('reconnected', () => this.members_.forEach((m) => m.heartbeatNow()));
    // Calls failing means this process may be blind even where its watch has not said so.
    this.monitor.on('suspended', () => this.cache.blind());
    this.monitor.on('reconnected', () => this.cache.sighted());
    const offSession = supports(store, 'sessionState') ? store.onSessionState!((state) => this.monitor.session(state)) : undefined;
    if (offSession) this.subscriptions.add(offSession);
    this.subscriptions.add(
      this.directory.subscribe(undefined, (event) => {
        if (event.type === 'added') {
          // A process that reads a role with members may have a part in its liveness (the reaper mode: a candidate to reap it).
          this.liveness.reading(event.member.role);
          this.emit('memberAdded', event);
        } else if (event.type === 'updated') this.emit('memberUpdated', event);
        else this.emit('memberRemoved', event);
      }),
    );
    this.emit('connected', { state: 'connected' });
  }

  /** This process's identity: the default holderIdentity and member id. */
  get identity(): string {
    return this.config.identity;
  }

  /** The backend: `memory`, `kubernetes`, ... */
  get backend(): string {
    return this.rawStore.backend;
  }

  /** The connection state now. */
  get state(): ConnectionState {
    return this.monitor.state;
  }

  /** False from the moment `close()` is called. */
  get isOpen(): boolean {
    return !this.closed;
  }

  private assertOpen(): void {
    if (this.closed) throw new ClosedError('the registry is closed', { backend: this.backend });
  }

  /** A registry opened `readOnly` writes nothing: what would write is refused before it starts. */
  private assertWritable(what: string): void {
    if (this.config.readOnly) throw new PermissionError('PERMISSION_DENIED', `${what}: this registry was opened read-only (registry.readOnly), so it writes nothing`, { backend: this.backend });
  }

  private maxPayload(): number {
    return Math.min(this.config.maxPayloadBytes, this.rawStore.maxPayloadBytes);
  }

  /**
   * Announces a member and heartbeats it until `withdraw()` or `close()`.
   * Resolves once the first record is written. An earlier incarnation's record
   * under the same role and id is taken over.
   */
  async announce(options: AnnounceOptions): Promise<MemberHandle> {
    this.assertOpen();
    this.assertWritable('announce()');
    if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('announce() takes { role, id?, payload? }');
    const id = options.id ?? this.identity;
    assertName('role', options.role);
    assertIdentity('member id', id);
    const max = this.maxPayload();
    assertPayload(options.payload, max);
    let handle: MemberHandle;
    handle = new MemberHandle({
      role: options.role,
      id,
      key: memberKey(options.role, id),
      liveness: this.liveness,
      payload: options.payload,
      timing: this.config.member,
      store: this.store,
      clock: this.clock,
      logger: this.logger,
      validatePayload: (payload) => assertPayload(payload, max),
      onWithdraw: () => this.members_.delete(handle),
    });
    await handle.announce();
    this.members_.add(handle);
    return handle;
  }

  /**
   * The members of `role` this process sees now, sorted by id. The first call
   * for a role lists it from the backend (rejecting with UNAVAILABLE when that
   * fails) and keeps it watched from then on; later calls read the cache.
   */
  async members(role: string): Promise<Member[]> {
    this.assertOpen();
    assertName('role', role);
    await this.directory.watch(role);
    await this.liveness.ready?.(role);
    await this.pods.ready(role);
    return this.directory.members(role);
  }

  /**
   * Calls `listener` with `added` for every current member of `role`, then with
   * each change. `removed` carries the member's last known data.
   */
  watchMembers(role: string, listener: MemberListener): Subscription {
    this.assertOpen();
    assertName('role', role);
    if (typeof listener !== 'function') throw new InvalidArgumentError('watchMembers() needs a listener function');
    // A role not watched yet: its members arrive as `added` once listed (the cache retries a failed list).
    this.directory.watch(role).catch(() => {});
    for (const member of this.directory.members(role)) listener({ type: 'added', member });
    return this.subscription(this.directory.subscribe(role, listener));
  }

  /**
   * The roles this process reads now, sorted: each it has listed or watched,
   * and once `roles()` was called, every role with a member. Read from the
   * cache: no call to the backend, and it starts no watch.
   */
  watchedRoles(): string[] {
    this.assertOpen();
    return this.directory.watchedRoles();
  }

  /** The roles that have at least one member now, sorted; from the first call on, every role is watched. */
  async roles(): Promise<string[]> {
    this.assertOpen();
    await this.directory.watch(undefined);
    return this.directory.roles();
  }

  /**
   * Every election with a record, sorted by name: its leader now and its latest
   * fencing token. A snapshot, judged by this process's clock when called; unlike
   * `observe()` and the watches, it does not confirm an expiry with the backend.
   */
  async elections(): Promise<LeaseInfo[]> {
    this.assertOpen();
    await this.kept.ready('election/');
    return leasesNow('election', this.cache, this.clock.now());
  }

  /** Every lock with a record, sorted by name: its holder now and its latest fencing token; a snapshot, as {@link elections}. */
  async locks(): Promise<LeaseInfo[]> {
    this.assertOpen();
    await this.kept.ready('lock/');
    return leasesNow('lock', this.cache, this.clock.now());
  }

  /**
   * Calls `listener` with `added` for every current election, then with each
   * change: `changed` when the leader changes (a new leader or term, a
   * resignation, or an expiry by this process's clock once a read confirms the
   * record unchanged), `removed` when a record is deleted. Renewals are not
   * events. Served by the shared watch cache.
   */
  watchElections(listener: LeaseListener): Subscription {
    return this.watchLeases('election', listener);
  }

  /** As {@link watchElections}, for every lock: `changed` when a lock is acquired, released or expires. */
  watchLocks(listener: LeaseListener): Subscription {
    return this.watchLeases('lock', listener);
  }

  private watchLeases(kind: 'election' | 'lock', listener: LeaseListener): Subscription {
    this.assertOpen();
    if (typeof listener !== 'function') throw new InvalidArgumentError(`watch${kind === 'election' ? 'Elections' : 'Locks'}() needs a listener function`);
    const directory = this.leases(kind);
    for (const lease of directory.list()) listener({ type: 'added', lease });
    return this.subscription(directory.subscribe(listener));
  }

  private leases(kind: 'election' | 'lock'): LeaseDirectory {
    if (kind === 'election') return (this.electionDirectory ??= new LeaseDirectory({ kind, ...this.trackerOptions() }));
    return (this.lockDirectory ??= new LeaseDirectory({ kind, ...this.trackerOptions() }));
  }

  /** What every view of elections and locks shares: the cache, a read to confirm an expiry, and its retry delay. */
  private trackerOptions() {
    return { cache: this.cache, store: this.store, clock: this.clock, logger: this.logger, retryMs: Math.min(this.config.election.retryPeriodMs, this.config.lock.retryPeriodMs) };
  }

  private subscription(off: () => void): Subscription {
    this.subscriptions.add(off);
    return {
      close: () => {
        off();
        this.subscriptions.delete(off);
      },
    };
  }

  /**
   * Campaigns for `election` as `identity` (default: the registry's) until
   * `resign()`. Leadership comes and goes through the handle's events.
   */
  campaign(election: string, identity: string = this.identity): Leadership {
    this.assertOpen();
    this.assertWritable('campaign()');
    assertName('election', election);
    assertIdentity('identity', identity);
    if (election.startsWith(REAPER_ELECTION_PREFIX)) throw new InvalidArgumentError(`election ${JSON.stringify(election)} is reserved: names starting ${REAPER_ELECTION_PREFIX} elect the member reapers of registry.member.liveness=reaper`);
    const id = `${election}\u0000${identity}`;
    if (this.campaigns.has(id)) throw new InvalidArgumentError(`${identity} is already campaigning for ${election} in this registry`);
    const holder = this.holder(electionKey(election), identity, 'election');
    this.campaigns.add(id);
    const leadership = new Leadership(election, identity, holder, this.logger, () => this.campaigns.delete(id));
    leadership.on('elected', (e) => this.emit('elected', e));
    leadership.on('lost', (e) => this.emit('leadershipLost', e));
    leadership.on('error', () => this.campaigns.delete(id));
    holder.start();
    return leadership;
  }

  /** Watches `election`'s leader without campaigning. */
  observe(election: string): LeaderObserver {
    this.assertOpen();
    assertName('election', election);
    const observer = new LeaderObserver(election, { key: electionKey(election), ...this.trackerOptions() });
    this.observers.add(observer);
    return observer;
  }

  /** Waits for the lock, then holds and renews it until `release()`. Rejects with LOCK_TIMEOUT, ABORTED or CLOSED (also when the registry closes while waiting). */
  async lock(name: string, options: LockOptions = {}): Promise<LockHandle> {
    this.assertOpen();
    this.assertWritable('lock()');
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
        giveUp(new ClosedError(`the registry closed while waiting for lock ${name}`, { backend: this.backend }));
      };
      this.lockWaiters.add(onClose);
      const onAbort = () => {
        timer?.cancel();
        giveUp(new AbortedError(`waiting for lock ${name} was aborted`, { cause: signal!.reason }));
      };
      const timer = timeoutMs === undefined ? undefined : this.clock.setTimeout(() => giveUp(new LockTimeoutError(`lock ${name} was not acquired within ${timeoutMs} ms`)), timeoutMs);
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

  /** One attempt: the lock if it is free now (by this process's view), otherwise undefined. */
  async tryLock(name: string): Promise<LockHandle | undefined> {
    this.assertOpen();
    this.assertWritable('tryLock()');
    assertName('lock', name);
    const holder = this.holder(lockKey(name), this.lockIdentity(), 'lock');
    let acquired: boolean;
    try {
      acquired = await holder.tryOnce();
    } finally {
      if (!holder.isHolding) this.holders.delete(holder);
    }
    if (!acquired) return undefined;
    return this.lockHandle(name, holder.fencingToken!, holder);
  }

  /** Withdraws every member, resigns every election and releases every lock, then disconnects. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    [...this.lockWaiters].forEach((onClose) => onClose());
    await Promise.allSettled([...[...this.members_].map((m) => m.withdraw()), ...[...this.holders].map((h) => h.stop('closed'))]);
    this.liveness.close();
    this.pods.close();
    this.observers.forEach((o) => o.close());
    this.subscriptions.forEach((off) => off());
    this.electionDirectory?.close();
    this.lockDirectory?.close();
    this.directory.close();
    this.kept.release();
    this.cache.close();
    this.monitor.close();
    try {
      await this.rawStore.close();
    } finally {
      this.store.activity.close();
    }
  }

  private lockIdentity(): string {
    // Each hold has its own identity, so two waiters in one process exclude each other too.
    return `${this.identity}.${this.lockPrefix}${(++this.lockSeq).toString(36)}`;
  }

  private holder(key: string, identity: string, kind: 'election' | 'lock'): LeaseHolder {
    const holder = new LeaseHolder({
      key,
      identity,
      timing: kind === 'election' ? this.config.election : this.config.lock,
      store: this.store,
      cache: this.cache,
      clock: this.clock,
      logger: this.logger,
      once: kind === 'lock',
    });
    this.holders.add(holder);
    if (kind === 'lock') holder.on('lost', () => this.holders.delete(holder));
    return holder;
  }

  private lockHandle(name: string, fencingToken: number, holder: LeaseHolder): LockHandle {
    const handle = new LockHandle(name, fencingToken, holder, () => this.holders.delete(holder));
    holder.once('lost', ({ reason }) => this.emit('lockLost', { name, fencingToken, reason }));
    this.emit('lockAcquired', { name, fencingToken });
    return handle;
  }
}
