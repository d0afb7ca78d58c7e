import type { ConfigSource, CoreConfigInput, Registry } from '@rollcall/core';
import type { RecordStore } from '@rollcall/core/spi';

/**
 * What a backend can do beyond the SPI, declared by the backend. A case that
 * needs a capability the backend lacks is registered as skipped, with the
 * reason in its title, so a run always shows what it did not prove.
 */

/** Store-level hooks for `storeConformance`. */
export interface StoreCapabilities {
  /**
   * Discards the backend's change history up to now (etcd compaction, trimming a
   * change table), so a watch from an earlier revision must get REVISION_TOO_OLD.
   * Absent: the too-old-revision case is skipped.
   */
  compact?(): Promise<void> | void;
  /** Cuts this one store's connection off; its calls must then fail UNAVAILABLE. Absent: the unreachable case is skipped. */
  partition?(store: RecordStore): Promise<void> | void;
  /** Restores a connection cut by `partition`. Required with `partition`. */
  heal?(store: RecordStore): Promise<void> | void;
  /** The store marks a watch's progress `synced` once it has caught up (see `WatchEvent`): the synced case then requires one. Default false: the case checks one only if it comes. */
  syncedProgress?: boolean;
}

/** The configuration the suite hands to a backend's factory: the object form without `type` or a backend section. */
export type ConformanceConfig = CoreConfigInput;

/**
 * How the suite starts a crashed client: a real child process that it kills
 * with SIGKILL.
 *
 * - `config`: a real backend. The child calls `createRegistry()` with the
 *   returned configuration and connects on its own; it must survive structured
 *   cloning (plain data, no functions).
 * - `ipc-store`: a backend the child cannot reach on its own (the memory store
 *   lives in this process). The suite serves the store returned by `openStore`
 *   to the child over the IPC channel; the child's core algorithms run for real
 *   over that proxy, and a SIGKILL leaves its records behind to expire.
 */
export type CrashChildTarget =
  | { kind: 'config'; config(config: ConformanceConfig): ConfigSource }
  | { kind: 'ipc-store'; openStore(cluster: string): Promise<RecordStore> | RecordStore };

/** Registry-level hooks for `registryConformance`. */
export interface RegistryCapabilities {
  /**
   * Cuts one registry's connection to the backend off and back on, as a network
   * partition would, leaving every other client connected. Absent: the
   * disconnect, loss-signal and connection-state cases are skipped.
   */
  partition?: {
    partition(registry: Registry): Promise<void> | void;
    heal(registry: Registry): Promise<void> | void;
  };
  /** Lets the suite run a client in a child process it can SIGKILL. Absent: the crashed-client cases are skipped. */
  crashChild?: CrashChildTarget;
  /** Discards the backend's change history, so a resuming watch must relist. Absent: the relist case is skipped. */
  compact?(): Promise<void> | void;
  /**
   * Stops and restarts the backend's server; resolves once it serves again.
   * Records must survive (a real server's data directory). Absent: the restart case is skipped.
   */
  restartServer?(): Promise<void>;
}

/** The skip title of a case that needs a capability the backend did not declare. */
export function skipReason(backend: string, capability: string, why: string): string {
  return `[skipped on ${backend}: no ${capability} capability] ${why}`;
}
