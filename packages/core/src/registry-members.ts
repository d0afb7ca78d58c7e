import type { Clock } from './clock.js';
import { InvalidArgumentError } from './errors.js';
import type { JsonValue } from './lease-record.js';
import type { Logger } from './logger.js';
import type { MemberDirectory } from './member-directory.js';
import { MemberHandle } from './member-handle.js';
import type { LivenessStrategy, MemberConfig } from './member-liveness.js';
import type { Member, MemberListener } from './member.js';
import type { MonitoredStore } from './monitored-store.js';
import { assertIdentity, assertName } from './names.js';
import { assertPayload } from './payload.js';
import type { PodRecords } from './pod-liveness.js';
import { memberKey } from './record-key.js';
import type { RegistryEmit } from './registry-events.js';

/** What `announce()` takes. */
export interface AnnounceOptions {
  /** The role, e.g. `worker`. */
  role: string;
  /** The member's id within the role. Default: the registry's identity. */
  id?: string;
  /** The first heartbeat's payload, plain JSON. */
  payload?: JsonValue;
}

/** What the members side of a registry works with. @internal */
export interface RegistryMembersOptions {
  identity: string;
  /** `registry.member`: timings and what a lost member does. */
  member: MemberConfig;
  /** Ends the process (`registry.member.afterLost=exit`). */
  exit: (code: number) => void;
  store: MonitoredStore;
  directory: MemberDirectory;
  /** How member liveness reaches peers (`registry.member.liveness`), chosen once as the registry opens. */
  liveness: LivenessStrategy;
  /** How readers judge pod members' records, whatever the mode. */
  pods: PodRecords;
  clock: Clock;
  logger: Logger;
  /** The largest payload this registry and its backend take now. */
  maxPayload(): number;
  emit: RegistryEmit;
}

/**
 * The members side of a registry: the members this process announced, kept
 * alive until withdrawn, and the roles it reads through the member directory.
 * The registry checks it is open (and writable) before each call.
 * @internal
 */
export class RegistryMembers {
  private readonly announced = new Set<MemberHandle>();

  constructor(private readonly options: RegistryMembersOptions) {}

  async announce(options: AnnounceOptions): Promise<MemberHandle> {
    if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('announce() takes { role, id?, payload? }');
    const id = options.id ?? this.options.identity;
    assertName('role', options.role);
    assertIdentity('member id', id);
    const max = this.options.maxPayload();
    assertPayload(options.payload, max);
    let handle: MemberHandle;
    handle = new MemberHandle({
      role: options.role,
      id,
      key: memberKey(options.role, id),
      liveness: this.options.liveness,
      payload: options.payload,
      timing: this.options.member,
      afterLost: this.options.member.afterLost,
      exit: this.options.exit,
      store: this.options.store,
      clock: this.options.clock,
      logger: this.options.logger,
      validatePayload: (payload) => assertPayload(payload, max),
      onWithdraw: () => this.announced.delete(handle),
    });
    handle.on('lost', (event) => this.options.emit('memberLost', event));
    handle.on('reannounced', (event) => this.options.emit('memberReannounced', event));
    await handle.announce();
    this.announced.add(handle);
    return handle;
  }

  /** Whether every member this process announced and has not withdrawn is alive now: false while one is lost and not yet announced again. */
  get allAlive(): boolean {
    for (const handle of this.announced) if (!handle.alive) return false;
    return true;
  }

  async members(role: string): Promise<Member[]> {
    assertName('role', role);
    await this.options.directory.watch(role);
    await this.options.liveness.ready?.(role);
    await this.options.pods.ready(role);
    return this.options.directory.members(role);
  }

  /** Calls `listener` with every current member of `role`, then with each change; returns the unsubscribe function. */
  watch(role: string, listener: MemberListener): () => void {
    assertName('role', role);
    if (typeof listener !== 'function') throw new InvalidArgumentError('watchMembers() needs a listener function');
    // A role not watched yet: its members arrive as `added` once listed (the cache retries a failed list).
    this.options.directory.watch(role).catch(() => {});
    for (const member of this.options.directory.members(role)) listener({ type: 'added', member });
    return this.options.directory.subscribe(role, listener);
  }

  watchedRoles(): string[] {
    return this.options.directory.watchedRoles();
  }

  async roles(): Promise<string[]> {
    await this.options.directory.watch(undefined);
    return this.options.directory.roles();
  }

  /** Emits every member change of every role read as the registry's events; returns the unsubscribe function. */
  forwardEvents(): () => void {
    return this.options.directory.subscribe(undefined, (event) => {
      if (event.type === 'added') {
        // A process that reads a role with members may have a part in its liveness (the reaper mode: a candidate to reap it).
        this.options.liveness.reading(event.member.role);
        this.options.emit('memberAdded', event);
      } else if (event.type === 'updated') this.options.emit('memberUpdated', event);
      else this.options.emit('memberRemoved', event);
    });
  }

  /** Shows every announced member alive now (after a reconnect). */
  heartbeatNow(): void {
    this.announced.forEach((m) => m.heartbeatNow());
  }

  /** Withdraws every announced member. */
  withdrawAll(): Promise<void>[] {
    return [...this.announced].map((m) => m.withdraw());
  }

  /** Stops the liveness strategy and the pod records' reading. */
  closeLiveness(): void {
    this.options.liveness.close();
    this.options.pods.close();
  }

  closeDirectory(): void {
    this.options.directory.close();
  }
}
