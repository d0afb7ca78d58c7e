import { createRegistry, type Clock, type CoreConfigInput, type MemberEvent, type Registry } from '../src/index.js';
import type { WatchListener, WatchSubscription } from '../src/store.js';
import { ManualClock, MemoryBackend, MemoryStore, settle } from '../src/testing.js';

/** A clock that shares a ManualClock's time but whose wall clock is off by `offsetMs`, like a host with a wrong clock. */
export function skewedClock(base: ManualClock, offsetMs: number): Clock {
  return {
    now: () => base.now(),
    wallNow: () => new Date(base.wallNow().getTime() + offsetMs),
    setTimeout: (fn, ms) => base.setTimeout(fn, ms),
  };
}

/** Registries on one memory backend and one manual clock, each with its own store so it can be cut off alone. */
export class Harness {
  readonly clock = new ManualClock();
  readonly backend = new MemoryBackend();
  private readonly opened: Registry[] = [];

  async registry<S extends MemoryStore = MemoryStore>(
    identity: string,
    config: CoreConfigInput = {},
    clock: Clock = this.clock,
    store: S = new MemoryStore({ backend: this.backend, cluster: 'test' }) as S,
  ): Promise<{ registry: Registry; store: S }> {
    const registry = await createRegistry({ type: 'memory', identity, ...config }, { store, clock });
    this.opened.push(registry);
    return { registry, store };
  }

  /**
   * A reader registry `identity` whose `role` member events are collected from
   * the start, and a raw store on the same backend, for records written as
   * another process writes them (a delete and a create under one key). The
   * caller closes `raw`.
   */
  async readerAndRawStore(identity: string, role: string, config: CoreConfigInput = {}): Promise<{ reader: Registry; events: MemberEvent[]; raw: MemoryStore }> {
    const { registry: reader } = await this.registry(identity, config);
    const events: MemberEvent[] = [];
    reader.watchMembers(role, (e) => events.push(e));
    await until(() => true);
    return { reader, events, raw: new MemoryStore({ backend: this.backend, cluster: 'test' }) };
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.opened.map((r) => r.close()));
  }
}

/** A memory store whose writes wait for `open()` while `hold()` is on: a reply delayed past a deadline. */
export class GatedStore extends MemoryStore {
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  /** Writes sent from now on are applied but their replies wait for `open()`. */
  hold(): void {
    this.gate = new Promise((resolve) => (this.openGate = resolve));
  }
  open(): void {
    this.openGate?.();
    this.gate = this.openGate = undefined;
  }
  override async create(...args: Parameters<MemoryStore['create']>): ReturnType<MemoryStore['create']> {
    const gate = this.gate;
    const written = await super.create(...args);
    await gate;
    return written;
  }
  override async update(...args: Parameters<MemoryStore['update']>): ReturnType<MemoryStore['update']> {
    const gate = this.gate;
    const written = await super.update(...args);
    await gate;
    return written;
  }
}

/**
 * A memory store whose outage its watch hides, as a client that resumes its watch
 * by itself does (the Kubernetes store across an API server restart): during
 * `outage()` calls fail UNAVAILABLE and the watch neither ends nor delivers; at
 * `restore()` it delivers what it missed.
 */
export class SilentOutageStore extends MemoryStore {
  private readonly held: (() => void)[] = [];
  outage(): void {
    this.refusing = true;
  }
  restore(): void {
    this.refusing = false;
    for (const deliver of this.held.splice(0)) deliver();
  }
  override watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    const hold = <T>(fn: (arg: T) => void) => (arg: T) => (this.refusing ? this.held.push(() => fn(arg)) : fn(arg));
    return super.watch(prefix, fromRevision, { event: hold((e) => listener.event(e)), error: hold((e) => listener.error(e)) });
  }
}

/** A memory store whose watch, once `stalled`, delivers nothing and reports nothing: a watch that died silently while requests still work. */
export class StalledWatchStore extends MemoryStore {
  stalled = false;
  override watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    return super.watch(prefix, fromRevision, { event: (e) => (this.stalled ? undefined : listener.event(e)), error: (e) => (this.stalled ? undefined : listener.error(e)) });
  }
}

/** Lets promise continuations run, with no time passing, until `condition` holds; fails after `rounds` settles. */
export async function until(condition: () => boolean, rounds = 100): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    if (condition()) return;
    await settle(1);
  }
  throw new Error(`condition not reached after ${rounds} settles: ${condition.toString()}`);
}

/** A role's member events as `registry` delivers them, with the `clock` time each arrived, and a one-line summary of each. */
export function memberLog(registry: Registry, role: string, clock?: Clock) {
  const events: MemberEvent[] = [];
  const at: number[] = [];
  registry.watchMembers(role, (e) => {
    events.push(e);
    if (clock) at.push(clock.now());
  });
  return { events, at, summary: () => events.map((e) => `${e.type} ${e.member.id}${e.type === 'removed' ? ` ${e.reason}` : ''}`) };
}

/** The seeded generator of `@rollcall/core/testing`, shared by the model tests: a failing sequence is replayed by its seed. */
export { seeded } from '../src/seeded.js';
