import type { KubeConfig } from '@kubernetes/client-node';
import { pluginContext, type RegistryPlugin, type StoreFactoryOptions } from '@rollcall/core/spi';
import { kubernetesOptions, type KubernetesOptions } from './options.js';
import { connectKubernetesStore, type KubernetesStore } from './store.js';

/** `registry.type=kubernetes`. Core loads it lazily by type. */
export const registryPlugin: RegistryPlugin<KubernetesOptions> = {
  type: 'kubernetes',
  options: kubernetesOptions,
  // Where the records live; the other keys only say how to get there.
  sameLocation: (a, b) => a.kubeconfig === b.kubeconfig && a.context === b.context && a.namespace === b.namespace,
  connect: (context) => connectKubernetesStore(context),
};

/** What {@link createKubernetesStore} takes: the `registry.kubernetes.*` keys, the cluster, and the runtime. */
export type CreateKubernetesStoreOptions = StoreFactoryOptions<KubernetesOptions> & {
  /** A KubeConfig you loaded yourself; takes the place of `kubeconfig` and `context`. */
  kubeConfig?: KubeConfig;
};

/**
 * Connects a Kubernetes record store directly, for `createRegistry(config, { store })` or for
 * tools; `createRegistry({ type: 'kubernetes', kubernetes: {...} })` is the usual way.
 */
export async function createKubernetesStore(options: CreateKubernetesStoreOptions = {}): Promise<KubernetesStore> {
  const { kubeConfig, ...rest } = options;
  return connectKubernetesStore(pluginContext(registryPlugin, rest), kubeConfig);
}

export { KubernetesStore } from './store.js';
export { serveReadinessProbe, type ReadinessProbe, type ReadinessProbeOptions } from './readiness-probe.js';
export { kubernetesOptions, type KubernetesOptions } from './options.js';
export { objectName } from './object-names.js';
export { CLUSTER_LABEL, KIND_LABEL, ROLE_LABEL, KEY_ANNOTATION, PAYLOAD_ANNOTATION, LEADER_ANNOTATION } from './codec.js';
export { ADMISSION_LABEL, leaseAdmissionManifest, leaseAdmissionPolicies, type LeaseAdmissionOptions } from './admission-policies.js';
