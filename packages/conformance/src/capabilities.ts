import type { ConfigSource, CoreConfigInput, Registry } from '@rollcall/core';
import type { RecordKey, RecordStore } from '@rollcall/core/spi';

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
  /**
   * Overwrites the stored value of `key` in `cluster` (a record the case
   * created) with `text`, past the store, as a foreign or broken writer would:
   * the bytes as they are where the backend keeps a record as JSON; mapped onto
   * its fields where it keeps objects (Kubernetes). Resolves false when the
   * server refused the value (a schema), so there is nothing hostile to read.
   * Absent: the hostile-record cases are skipped.
   */
  overwriteRaw?(cluster: string, key: RecordKey, text: string): Promise<boolean>;
}

/** The configuration the suite hands to a backend's factory: the object form without `type` or a backend section. */
export type ConformanceConfig = CoreConfigInput;

/**
 * How the suite starts a crashed client: a real child process that it kills
 * with SIGKILL.
 *
 * - `config`: a real backend. The child calls `createRegistry()` with the
 *   returned configuration and connects on its own; it must survive structured
 *   cloning (plain data, no functions). In pod mode `pod` is the child's own
 *   pod, which the configuration must name (see {@link PodCapability}).
 * - `ipc-store`: a backend the child cannot reach on its own (the memory store
 *   lives in this process). The suite serves the store returned by `openStore`
 *   to the child over the IPC channel; the child's core algorithms run for real
 *   over that proxy, and a SIGKILL leaves its records behind to expire.
 */
export type CrashChildTarget =
  | { kind: 'config'; config(config: ConformanceConfig, pod?: ConformancePod): ConfigSource }
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
  /**
   * The backend's watch may report a record's state after two changes as one
   * (ZooKeeper: a one-shot watch reads the node after its notification, and
   * finds it already deleted), so a reader may never see a short-lived state
   * such as a member's withdraw mark. Cases that assert a reader saw one then
   * accept either outcome the contract allows. Default false: every change is
   * seen, save across a relist.
   */
  foldingWatch?: boolean;
  /** Discards the backend's change history, so a resuming watch must relist. Absent: the relist case is skipped. */
  compact?(): Promise<void> | void;
  /**
   * Stops and restarts the backend's server; resolves once it serves again.
   * Records must survive (a real server's data directory). Absent: the restart case is skipped.
   */
  restartServer?(): Promise<void>;
  /**
   * Pods for the `pod` liveness mode (`registryConformance({ liveness: 'pod' })`).
   * Absent: a pod-mode run registers its cases as skipped.
   */
  pods?: PodCapability;
}

/**
 * A pod of the suite's, standing in for the pod a registry's process runs in.
 * The suite never kills a pod's process through it: it changes what the
 * cluster says of the pod, as a kubelet or the node controller would.
 */
export interface ConformancePod {
  /** The pod's uid: the registry started in it names it as its own pod (on Kubernetes, `kubernetes.podUid`). */
  readonly uid: string;
  /**
   * Turns the pod not Ready, as the kubelet does when its container dies or
   * the node controller when its node is lost. Resolves once the API server
   * has the condition; the readers' view follows through their watch.
   */
  notReady(): Promise<void>;
  /** Turns the pod Ready again (its node back, its probe passing); resolves once the API server has the condition. */
  ready(): Promise<void>;
  /** Deletes the pod (grace 0); resolves once the API server accepted the delete. A member record the pod owns goes with it. */
  delete(): Promise<void>;
}

/**
 * How the suite runs in the `pod` liveness mode: every registry it creates
 * (crash children too) gets a pod of its own, Ready and behind the Service of
 * every role the cases use, before the registry is created; the suite passes
 * the pod to `createRegistry` and to `crashChild.config`, whose configuration
 * must name it. Where a case needs a member to stop being live (a crash, a
 * partition) the suite turns its pod not Ready, and deletes it where the
 * record must go, instead of waiting out a heartbeat lease.
 */
export interface PodCapability {
  /** Creates a pod for the registry `identity` is about to run; resolves once it is Ready and its role Services list it. */
  start(identity: string): Promise<ConformancePod>;
  /**
   * How long a pod's not-Ready condition, or its deletion, may take to reach a
   * reader's view (the endpoints controller, then the reader's watch), on top
   * of the suite's `watchBoundMs`. Milliseconds. Default 0.
   */
  readinessDelayMs?: number;
}

/** The skip title of a case that needs a capability the backend did not declare. */
export function skipReason(backend: string, capability: string, why: string): string {
  return `[skipped on ${backend}: no ${capability} capability] ${why}`;
}
