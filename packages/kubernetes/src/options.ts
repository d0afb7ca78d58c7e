import type { OptionSchema, PluginOptionsInput } from '@rollcall/core/spi';

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
}

/** The `registry.kubernetes.*` keys. */
export const kubernetesOptions: OptionSchema = Object.freeze({
  namespace: { type: 'string', doc: 'Namespace of every record.', check: (v: string) => (/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(v) ? undefined : 'a DNS-1123 label') },
  kubeconfig: { type: 'string', doc: 'Path of a kubeconfig file.' },
  context: { type: 'string', doc: 'Kubeconfig context.' },
  lock: { type: 'enum', values: ['lease', 'configmap'], default: 'lease', doc: 'Resource of election and lock records.' },
  watchSilenceTimeoutMs: { type: 'integer', default: 90_000, min: 1000, doc: 'Restart a silent watch after this long, ms.' },
  watchTimeoutSeconds: { type: 'integer', default: 300, min: 1, doc: 'Server-side watch lifetime, s.' },
});

declare module '@rollcall/core' {
  /** `kubernetes: { ... }` in the object form, typed by this package: a misspelt key fails to compile. */
  interface RegistryBackendSections {
    kubernetes: PluginOptionsInput<KubernetesOptions>;
  }
}
