import type { PluginOptionsInput } from '@rollcall/core';
import type { OptionSchema } from '@rollcall/core/spi';

/** `registry.kubernetes.*`: where the records live and how to reach the API server. */
export interface KubernetesOptions {
  /** Namespace of every record. Default: `POD_NAMESPACE`, else the in-cluster service account's namespace, else the kubeconfig context's, else `default`. */
  readonly namespace?: string;
  /** Path of a kubeconfig file. Default: `KUBECONFIG`, `~/.kube/config`, or the in-cluster service account, as kubectl finds them. */
  readonly kubeconfig?: string;
  /** Kubeconfig context to use. Default: the current context. */
  readonly context?: string;
  /** Where election and lock records live: `lease` (coordination.k8s.io/v1) or `configmap` (the `control-plane.alpha.kubernetes.io/leader` annotation older client-go and fabric8 use). Members are always Leases. Default `lease`. */
  readonly lock: 'lease' | 'configmap';
  /** Restart a watch stream that has sent nothing, not even a bookmark, for this long. Milliseconds. Default 90000. */
  readonly watchSilenceTimeoutMs: number;
  /** Server-side lifetime asked of each watch request, after which it is resumed from its resourceVersion. Seconds. Default 300. */
  readonly watchTimeoutSeconds: number;
  /**
   * `registry.member.liveness=pod`: the Service whose EndpointSlices say which of a role's pods are Ready, `{role}`
   * replaced by the role (lowercased, `.` and `_` as `-`). A headless Service (`clusterIP: None`) selecting the pods
   * of the role's members, without `publishNotReadyAddresses`. Default `rollcall-{role}`.
   */
  readonly memberService: string;
  /** `registry.member.liveness=pod`: the uid of the pod this process runs in. Default: `POD_UID` (the downward API's `metadata.uid`); neither means not in a pod (members keep heartbeats). */
  readonly podUid?: string;
  /** The name of the pod this process runs in, a pod of the records' namespace: its member Leases are owned by it (with `podUid`), so deleting the pod removes them. Default: `POD_NAME` (with `POD_NAMESPACE` the records' namespace). */
  readonly podName?: string;
  /** `registry.member.liveness=pod`: how long announce waits for this pod to show in its role's Service before failing INVALID_CONFIG. Milliseconds. Default 30000. */
  readonly memberServiceWaitMs: number;
}

/** The `registry.kubernetes.*` keys. */
export const kubernetesOptions: OptionSchema = Object.freeze({
  namespace: { type: 'string', doc: 'Namespace of every record.', check: (v: string) => (/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(v) ? undefined : 'a DNS-1123 label') },
  kubeconfig: { type: 'string', doc: 'Path of a kubeconfig file.' },
  context: { type: 'string', doc: 'Kubeconfig context.' },
  lock: { type: 'enum', values: ['lease', 'configmap'], default: 'lease', doc: 'Resource of election and lock records.' },
  watchSilenceTimeoutMs: { type: 'integer', default: 90_000, min: 1000, doc: 'Restart a silent watch after this long, ms.' },
  watchTimeoutSeconds: { type: 'integer', default: 300, min: 1, doc: 'Server-side watch lifetime, s.' },
  memberService: { type: 'string', default: 'rollcall-{role}', doc: 'liveness=pod: the Service per role whose EndpointSlices give its pods\' readiness; {role} is the role.' },
  podUid: { type: 'string', doc: 'liveness=pod: this process\'s pod uid. Default POD_UID.' },
  podName: { type: 'string', doc: 'This process\'s pod, in the records\' namespace: it owns the member Leases. Default POD_NAME.' },
  memberServiceWaitMs: { type: 'integer', default: 30_000, min: 0, doc: 'liveness=pod: how long announce waits for this pod in its role Service, ms.' },
});

declare module '@rollcall/core' {
  /** `kubernetes: { ... }` in the object form, typed by this package: a misspelt key fails to compile. */
  interface RegistryBackendSections {
    kubernetes: PluginOptionsInput<KubernetesOptions>;
  }
}
