import { readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { ConfigurationError, hasCode, silentLogger, type Logger } from '@rollcall/core';
import type { PluginContext, RegistryPlugin } from '@rollcall/core/spi';
import { ApiClient } from './api-client.js';
import { CLUSTER_LABEL, KEY_ANNOTATION } from './codec.js';
import { BACKEND } from './errors.js';
import { KUBERNETES_OPTIONS, type KubernetesStoreOptions } from './options.js';
import { podOwner } from './pod-owner.js';
import { KubernetesStore } from './store.js';

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export interface KubernetesConnectOptions extends Partial<KubernetesStoreOptions> {
  /** The cluster whose records the store keeps. */
  cluster: string;
  /** Bound on each API call, milliseconds. Default 5000. */
  requestTimeoutMs?: number;
  logger?: Logger;
  /** A KubeConfig you loaded yourself; takes the place of `kubeconfig` and `context`. */
  kubeConfig?: KubeConfig;
}

function loadKubeConfig(options: KubernetesConnectOptions): KubeConfig {
  if (options.kubeConfig) return options.kubeConfig;
  const kc = new KubeConfig();
  try {
    if (options.kubeconfig) kc.loadFromFile(options.kubeconfig);
    else kc.loadFromDefault();
  } catch (err) {
    throw new ConfigurationError(`registry.kubernetes.kubeconfig: cannot load ${options.kubeconfig ?? 'the default kubeconfig'}: ${(err as Error).message}`, { key: 'registry.kubernetes.kubeconfig', backend: BACKEND, cause: err });
  }
  if (options.context) {
    if (!kc.getContextObject(options.context)) throw new ConfigurationError(`registry.kubernetes.context: no context ${JSON.stringify(options.context)} in the kubeconfig`, { key: 'registry.kubernetes.context', backend: BACKEND });
    kc.setCurrentContext(options.context);
  }
  if (!kc.getCurrentCluster()) throw new ConfigurationError('registry.kubernetes.kubeconfig: the kubeconfig has no current cluster', { key: 'registry.kubernetes.kubeconfig', backend: BACKEND });
  return kc;
}

function resolveNamespace(options: KubernetesConnectOptions, kc: KubeConfig): string {
  if (options.namespace) return options.namespace;
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim();
  } catch {
    // not in a pod
  }
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}

/**
 * Connects a KubernetesStore: loads the kubeconfig (or the in-cluster service
 * account), and proves the namespace exists with a dry-run create, so a wrong
 * namespace fails here with a clear error rather than at the first write.
 */
export async function kubernetesStore(options: KubernetesConnectOptions): Promise<KubernetesStore> {
  const kc = loadKubeConfig(options);
  const namespace = resolveNamespace(options, kc);
  const logger = options.logger ?? silentLogger;
  const client = new ApiClient(kc, options.requestTimeoutMs ?? 5000);
  const store = new KubernetesStore({
    client,
    logger,
    cluster: options.cluster,
    namespace,
    lock: options.lock ?? 'lease',
    watchSilenceTimeoutMs: options.watchSilenceTimeoutMs ?? 90_000,
    watchTimeoutSeconds: options.watchTimeoutSeconds ?? 300,
    podOwner: podOwner(namespace),
  });
  try {
    await client.request({
      method: 'POST',
      path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases?dryRun=All`,
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { generateName: `${options.cluster}-probe-`, labels: { [CLUSTER_LABEL]: options.cluster }, annotations: { [KEY_ANNOTATION]: 'probe/connect' } }, spec: {} },
      context: { verb: 'create', resource: 'leases.coordination.k8s.io', namespace },
    });
  } catch (err) {
    if (hasCode(err, 'NOT_FOUND')) {
      client.close();
      throw new ConfigurationError(`registry.kubernetes.namespace: namespace ${namespace} does not exist on ${client.server}`, { key: 'registry.kubernetes.namespace', backend: BACKEND, cause: err });
    }
    // A read-only identity may not create even in a dry run; the first list tells whether it may read.
    if (!hasCode(err, 'PERMISSION_DENIED')) {
      client.close();
      throw err;
    }
  }
  return store;
}

/** `registry.type=kubernetes`. */
export const registryPlugin: RegistryPlugin<KubernetesStoreOptions> = {
  type: 'kubernetes',
  options: KUBERNETES_OPTIONS,
  connect: ({ cluster, options, logger, requestTimeoutMs }: PluginContext<KubernetesStoreOptions>) => kubernetesStore({ ...options, cluster, logger, requestTimeoutMs }),
};
