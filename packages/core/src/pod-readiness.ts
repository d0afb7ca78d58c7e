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
  /**
   * Optional: calls `listener` at every Ready answer this process's own
   * readiness probe serves (a backend's probe server reports them), with how
   * long after such an answer the kubelet may mark the pod not Ready. A pod
   * member is lost (`probe-missed`) once that long has passed with no answer:
   * a paused or hung process stops before its peers may remove it. Returns the
   * unsubscribe function.
   */
  onSelfProbe?(listener: (answer: SelfProbeAnswer) => void): () => void;
}

/** One Ready answer of this process's own readiness probe. */
export interface SelfProbeAnswer {
  /** When it was served, monotonic milliseconds of the registry's clock. */
  at: number;
  /** From an answer, the earliest the kubelet may mark the pod not Ready when no other succeeds (its probe's failureThreshold × periodSeconds + timeoutSeconds, less a margin). Milliseconds. */
  notReadyAfterMs: number;
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
