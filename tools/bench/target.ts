import { type ConfigSource, createRegistry, type Registry } from '@rollcall/core';
import type { CrashChildTarget } from '@rollcall/conformance';
import type { ServerName } from '../testenv/index.js';
import type { IdleRequests, NotApplicable } from './results.js';
import { BENCH_TIMING } from './timing.js';

/** The backends the benchmark knows, in the table's order. */
export const BACKEND_NAMES = ['memory', 'sqlite', 'mysql', 'postgres', 'etcd', 'zookeeper', 'kubernetes'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/** `type` and the backend's section of a registry configuration, e.g. `{ type: 'etcd', etcd: { endpoints } }`. */
export type BackendConfig = { type: string } & Record<string, unknown>;

/** Counts the requests idle processes send, over one measurement of `windowMs` per role. */
export interface IdleProbe {
  measure(windowMs: number): Promise<IdleRequests>;
}

/** A backend made ready for one run: where its registries connect, and how to count their requests. */
export interface BenchTarget {
  /**
   * The configuration of registry number `slot`. Registries with different
   * slots must not share a connection or a poller, as separate processes would
   * not (the SQL backends share one per process and settings).
   */
  backendConfig(slot: number): BackendConfig;
  /**
   * The configuration a deployed process would use, where it differs from
   * {@link backendConfig}: on Kubernetes a service account's token bound to the
   * shipped Role, not the admin's certificate (which skips RBAC and costs the
   * API server a certificate check per request). Fresh credentials each call.
   */
  processConfig?(): Promise<BackendConfig>;
  /** How the crash child, the process the failover scenario kills, reaches the backend. */
  crashChild: CrashChildTarget;
  /** The server's own count of idle processes' requests, or why there is none. */
  idle: IdleProbe | NotApplicable;
  /** Removes what the run made (a database, a file, a namespace). */
  close(): Promise<void>;
}

/** One backend of the table. */
export interface BenchBackend<T extends BenchTarget = BenchTarget> {
  name: BackendName;
  /** The test-environment servers it runs on, brought up before it is prepared. */
  servers: readonly ServerName[];
  prepare(): Promise<T>;
}

/** A crash child that connects on its own with `backendConfig` (any backend with a server or a file). */
export function crashChildWithConfig(backendConfig: BenchTarget['backendConfig']): CrashChildTarget {
  return { kind: 'config', config: (config) => ({ ...config, ...backendConfig(0) }) as ConfigSource };
}

/** What opening a registry needs of a target. */
export type RegistrySource = Pick<BenchTarget, 'backendConfig'>;

export interface OpenOptions {
  cluster: string;
  identity: string;
  /** See {@link BenchTarget.backendConfig}. */
  slot: number;
  /** Backend defaults instead of {@link BENCH_TIMING} (the idle counts). Default false. */
  defaultTiming?: boolean;
}

/** Opens a registry on `target` with the benchmark's timings (or the defaults). */
export function openRegistry(target: RegistrySource, options: OpenOptions): Promise<Registry> {
  const timing = options.defaultTiming ? {} : { election: BENCH_TIMING, lock: BENCH_TIMING };
  return createRegistry({ ...target.backendConfig(options.slot), cluster: options.cluster, identity: options.identity, ...timing });
}

/** Registries a scenario opened, closed together at its end whatever happened. */
export class OpenRegistries {
  private readonly open: Registry[] = [];

  constructor(private readonly target: RegistrySource) {}

  async add(options: OpenOptions): Promise<Registry> {
    const registry = await openRegistry(this.target, options);
    this.open.push(registry);
    return registry;
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled(this.open.splice(0).map((r) => r.close()));
  }
}
