import type { RecordStore } from './store.js';
import { supports } from './store-supports.js';

/**
 * An optional capability of a backend's store, for `registry.member.liveness=pod`:
 * which pods are Ready, as the platform itself knows it (on Kubernetes, the
 * EndpointSlices of a Service per role). A store that has it declares
 * `supports.podReadiness` and holds it as `podReadiness`; core's pod strategy
 * reads it through {@link podReadinessOf}, and a store without it refuses the
 * mode with INVALID_CONFIG. Core never sees the platform's client.
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

/** The store's pod readiness (`supports.podReadiness`), or undefined when its backend declares none. */
export function podReadinessOf(store: RecordStore): PodReadinessSource | undefined {
  return supports(store, 'podReadiness') ? (store as RecordStore & { podReadiness: PodReadinessSource }).podReadiness : undefined;
}
