import { bindBackendActivity } from './backend-activity.js';
import { systemClock, type Clock } from './clock.js';
import type { RegistryConfig } from './config/registry-config.js';
import type { ConnectionState } from './connection-monitor.js';
import type { LockHandle } from './distributed-lock.js';
import { Emitter } from './emitter.js';
import { ClosedError, InvalidArgumentError, PermissionError } from './errors.js';
import type { LeaderObserver } from './leader-observer.js';
import type { LeaseInfo, LeaseListener } from './lease-info.js';
import type { Leadership } from './leadership.js';
import { confirmByMark, confirmByReading } from './liveness-judge.js';
import { LIVENESS_MODES } from './liveness-modes.js';
import { silentLogger, type Logger } from './logger.js';
import { MemberDirectory } from './member-directory.js';
import type { MemberHandle } from './member-handle.js';
import type { LivenessFactory, LivenessStrategy } from './member-liveness.js';
import type { Member, MemberListener } from './member.js';
import { openFailover, type Failover, type FailoverHandler, type FailoverLeadership, type FailoverOptions } from './failover.js';
import { PodRecords } from './pod-liveness.js';
import { RegistryConnection } from './registry-connection.js';
import type { RegistryEmit, RegistryEvents } from './registry-events.js';
import { RegistryLeases, type LockOptions } from './registry-leases.js';
import { RegistryMembers, type AnnounceOptions } from './registry-members.js';
import type { RecordStore } from './store.js';
import { supports } from './store-supports.js';

export type { RegistryEvents } from './registry-events.js';
export type { AnnounceOptions } from './registry-members.js';
export type { LockOptions } from './registry-leases.js';

/** A subscription of `watchMembers`, `watchElections` or `watchLocks`. */
export interface Subscription {
  /** Stops the calls to the listener. Idempotent. */
  close(): void;
}

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

/** The members side of each registry, for {@link announcedAlive}. */
const announcers = new WeakMap<Registry, RegistryMembers>();

/**
 * Whether every member `registry` announced (and has not withdrawn) is alive
 * now, by its own clock: false while one is past its bound, or lost and not yet
 * announced again. For a readiness probe that binds its members
 * (`serveReadinessProbe` with `kubeletProbe`).
 */
export function announcedAlive(registry: Registry): boolean {
  const members = announcers.get(registry);
  if (!members) throw new InvalidArgumentError('announcedAlive() takes a registry made by createRegistry()');
  return members.allAlive;
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
  private readonly subscriptions = new Set<() => void>();
  private closed = false;
  /** Announced members and the roles read. */
  private readonly members_: RegistryMembers;
  /** Elections and locks: held, observed and watched. */
  private readonly leases: RegistryLeases;

  private constructor(
    /** The validated, frozen configuration. */
    readonly config: RegistryConfig,
    private readonly connection: RegistryConnection,
    directory: MemberDirectory,
    liveness: LivenessStrategy,
    pods: PodRecords,
    private readonly clock: Clock,
    logger: Logger,
    exit: (code: number) => void,
  ) {
    super(logger);
    const { store, cache } = connection;
    const emit: RegistryEmit = (type, event) => this.emit(type, event);
    this.members_ = new RegistryMembers({ identity: config.identity, member: config.member, exit, store, directory, liveness, pods, clock, logger, maxPayload: () => this.maxPayload(), emit });
    this.leases = new RegistryLeases({ config, store, cache, clock, logger, backend: () => this.backend, emit });
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
    runtime: { clock?: Clock; logger?: Logger; liveness?: LivenessFactory; exit?: (code: number) => void } = {},
  ): Promise<Registry> {
    const clock = runtime.clock ?? systemClock;
    const logger = runtime.logger ?? silentLogger;
    let registry: Registry | undefined;
    const connection = await RegistryConnection.open(store, resolved, clock, logger, (entry) => registry?.emit('corruptRecord', { key: entry.key, error: entry.error }));
    const { cache, store: monitored } = connection;
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
      holder: resolved.readOnly ? undefined : (key: string) => registry!.leases.holder(key, resolved.identity, 'election'),
      rejudge: (key: string) => directory?.rejudge(key),
    };
    try {
      liveness = (runtime.liveness ?? LIVENESS_MODES[resolved.member.liveness])(context);
    } catch (err) {
      // A mode this backend cannot serve (pod without pod readiness): nothing stays open.
      await connection.abandon();
      throw err;
    }
    const pods = new PodRecords(context);
    directory = new MemberDirectory({ cache, store: monitored, clock, logger, retryMs: resolved.member.heartbeatIntervalMs, liveness, pods, confirm });
    registry = new Registry(resolved, connection, directory, liveness, pods, clock, logger, runtime.exit ?? ((code) => process.exit(code)));
    stores.set(registry, store);
    announcers.set(registry, registry.members_);
    bindBackendActivity(registry, monitored.activity);
    registry.wire(store);
    return registry;
  }

  private wire(store: RecordStore): void {
    const { monitor, cache } = this.connection;
    for (const type of ['connected', 'suspended', 'lost', 'reconnected'] as const) {
      monitor.on(type, (event) => this.emit(type, event as never));
    }
    monitor.on('lost', () => this.leases.connectionLost());
    monitor.on('reconnected', () => this.members_.heartbeatNow());
    // Calls failing means this process may be blind even where its watch has not said so.
    monitor.on('suspended', () => cache.blind());
    monitor.on('reconnected', () => cache.sighted());
    const offSession = supports(store, 'sessionState') ? store.onSessionState!((state) => monitor.session(state)) : undefined;
    if (offSession) this.subscriptions.add(offSession);
    this.subscriptions.add(this.members_.forwardEvents());
    this.emit('connected', { state: 'connected' });
  }

  /** This process's identity: the default holderIdentity and member id. */
  get identity(): string {
    return this.config.identity;
  }

  /** The backend: `memory`, `kubernetes`, ... */
  get backend(): string {
    return this.connection.raw.backend;
  }

  /** The connection state now. */
  get state(): ConnectionState {
    return this.connection.monitor.state;
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
    return Math.min(this.config.maxPayloadBytes, this.connection.raw.maxPayloadBytes);
  }

  /**
   * Announces a member and heartbeats it until `withdraw()` or `close()`.
   * Resolves once the first record is written. An earlier incarnation's record
   * under the same role and id (a restart within its lease) is removed first:
   * peers see it `removed`, then this one `added`. The handle judges itself by
   * its own clock (`alive`, `signal`, `lost`; `registry.member.afterLost`).
   */
  async announce(options: AnnounceOptions): Promise<MemberHandle> {
    this.assertOpen();
    this.assertWritable('announce()');
    return this.members_.announce(options);
  }

  /**
   * The members of `role` this process sees now, sorted by id. The first call
   * for a role lists it from the backend (rejecting with UNAVAILABLE when that
   * fails) and keeps it watched from then on; later calls read the cache.
   */
  async members(role: string): Promise<Member[]> {
    this.assertOpen();
    return this.members_.members(role);
  }

  /**
   * Calls `listener` with `added` for every current member of `role`, then with
   * each change. `removed` carries the member's last known data.
   */
  watchMembers(role: string, listener: MemberListener): Subscription {
    this.assertOpen();
    return this.subscription(this.members_.watch(role, listener));
  }

  /**
   * The roles this process reads now, sorted: each it has listed or watched,
   * and once `roles()` was called, every role with a member. Read from the
   * cache: no call to the backend, and it starts no watch.
   */
  watchedRoles(): string[] {
    this.assertOpen();
    return this.members_.watchedRoles();
  }

  /** The roles that have at least one member now, sorted; from the first call on, every role is watched. */
  async roles(): Promise<string[]> {
    this.assertOpen();
    return this.members_.roles();
  }

  /**
   * Every election with a record, sorted by name: its leader now and its latest
   * fencing token. A snapshot, judged by this process's clock when called; unlike
   * `observe()` and the watches, it does not confirm an expiry with the backend.
   */
  async elections(): Promise<LeaseInfo[]> {
    this.assertOpen();
    return this.leases.elections();
  }

  /** Every lock with a record, sorted by name: its holder now and its latest fencing token; a snapshot, as {@link elections}. */
  async locks(): Promise<LeaseInfo[]> {
    this.assertOpen();
    return this.leases.locks();
  }

  /**
   * Calls `listener` with `added` for every current election, then with each
   * change: `changed` when the leader changes (a new leader or term, a
   * resignation, or an expiry by this process's clock once a read confirms the
   * record unchanged), `removed` when a record is deleted. Renewals are not
   * events. Served by the shared watch cache.
   */
  watchElections(listener: LeaseListener): Subscription {
    this.assertOpen();
    return this.subscription(this.leases.watch('election', listener));
  }

  /** As {@link watchElections}, for every lock: `changed` when a lock is acquired, released or expires. */
  watchLocks(listener: LeaseListener): Subscription {
    this.assertOpen();
    return this.subscription(this.leases.watch('lock', listener));
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
    return this.leases.campaign(election, identity);
  }

  /** Watches `election`'s leader without campaigning. */
  observe(election: string): LeaderObserver {
    this.assertOpen();
    return this.leases.observe(election);
  }

  /** Waits for the lock, then holds and renews it until `release()`. Rejects with LOCK_TIMEOUT, ABORTED or CLOSED (also when the registry closes while waiting). */
  async lock(name: string, options: LockOptions = {}): Promise<LockHandle> {
    this.assertOpen();
    this.assertWritable('lock()');
    return this.leases.lock(name, options);
  }

  /** One attempt: the lock if it is free now (by this process's view), otherwise undefined. */
  async tryLock(name: string): Promise<LockHandle | undefined> {
    this.assertOpen();
    this.assertWritable('tryLock()');
    return this.leases.tryLock(name);
  }

  /**
   * Runs `handler` once for each removed member incarnation of `role`, only
   * while `leadership` leads, across leader crashes, handovers and restarts:
   * a record per incarnation under `failover/<role>/`, claimed under the
   * leader's fencing token and acknowledged when the handler resolves. See
   * docs/failover.md for the guarantee and the handler's contract.
   */
  failover(role: string, leadership: FailoverLeadership, handler: FailoverHandler, options: FailoverOptions = {}): Failover {
    this.assertOpen();
    this.assertWritable('failover()');
    const { store, cache } = this.connection;
    const view = (r: string) => ({ ready: () => this.members_.members(r), watch: (l: MemberListener) => this.members_.watch(r, l) });
    const failover = openFailover({ store, cache, clock: this.clock, logger: this.emitterLogger, view }, role, leadership, handler, options);
    const offs = [failover.on('started', (e) => this.emit('failoverStarted', e)), failover.on('acknowledged', (e) => this.emit('failoverAcknowledged', e)), failover.on('pending', (e) => this.emit('failoverPending', e))];
    this.subscriptions.add(() => (failover.close(), offs.forEach((off) => off())));
    return failover;
  }

  /** Withdraws every member, resigns every election and releases every lock, then disconnects. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.leases.endWaits();
    await Promise.allSettled([...this.members_.withdrawAll(), ...this.leases.stopHolders()]);
    this.members_.closeLiveness();
    this.leases.closeObservers();
    this.subscriptions.forEach((off) => off());
    this.leases.closeViews();
    this.members_.closeDirectory();
    this.leases.releaseKept();
    await this.connection.close();
  }
}
