import type { RecordStore } from './store.js';

/**
 * An optional capability of a backend's store, for `registry.member.liveness=pod`:
 * which pods are Ready, as the platform itself knows it (on Kubernetes, the
 * EndpointSlices of a Service per role). Core's pod strategy asks the store for
 * it ({@link podReadinessOf}); a store without it refuses the mode with
 * INVALID_CONFIG. Core never sees the platform's client.
 */
export interface PodReadinessSource {
  /** The uid of the pod this process runs in (the downward API's `metadata.uid`); undefined outside a pod, where members keep heartbeats. */
  readonly podUid: string | undefined;
  /**
   * Resolves once the platform shows this process's pod as one that serves
   * `role`'s readiness (Ready or not); rejects with INVALID_CONFIG naming what
   * is missing (the Service, its selector's label on the pod template) when it
   * does not within a bound the backend documents. Called before a member of
   * `role` is first written.
   */
  assertServed(role: string): Promise<void>;
  /**
   * Follows the readiness of the pods that serve `role`, with one watch:
   * `changed` gets the uids of the Ready ones after every change (and after
   * the first list). While the watch is broken the last view stands.
   */
  watchRole(role: string, changed: (ready: ReadonlySet<string>) => void): PodReadinessWatch;
}

/** One role's readiness watch. */
export interface PodReadinessWatch {
  /** Resolves after the first list has been reported; rejects when it failed (PERMISSION_DENIED naming the resource, UNAVAILABLE). The watch keeps trying. */
  readonly listed: Promise<void>;
  close(): void;
}

/** A store that offers pod readiness: the Kubernetes store. */
export interface PodReadinessCapable {
  readonly podReadiness: PodReadinessSource;
}

/** The store's pod readiness, or undefined when its backend has none. */
export function podReadinessOf(store: RecordStore): PodReadinessSource | undefined {
  const source = (store as Partial<PodReadinessCapable>).podReadiness;
  return typeof source === 'object' && source !== null ? source : undefined;
}
