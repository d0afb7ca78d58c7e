import { MemoryBackend, MemoryStore, openRegistry, type Clock, type Registry, type RegistryConfigInput } from '../src/index.js';
import { ManualClock } from '../src/testing.js';

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

  async registry(identity: string, config: Omit<RegistryConfigInput, 'type'> = {}, clock: Clock = this.clock): Promise<{ registry: Registry; store: MemoryStore }> {
    const store = new MemoryStore({ backend: this.backend, cluster: 'test' });
    const registry = await openRegistry(store, { identity, ...config }, { clock });
    this.opened.push(registry);
    return { registry, store };
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.opened.map((r) => r.close()));
  }
}
