import { pluginContext, type RegistryPlugin, type StoreFactoryOptions } from '@rollcall/core/spi';
import { etcdOptions, validateEtcdOptions, type EtcdOptions } from './options.js';
import { connectEtcdStore, type EtcdStore } from './store.js';

/** `registry.type=etcd`. Core loads it lazily by type. */
export const registryPlugin: RegistryPlugin<EtcdOptions> = {
  type: 'etcd',
  options: etcdOptions,
  validate: validateEtcdOptions,
  // Where the records live; the other keys only say how to get there.
  sameLocation: (a, b) => JSON.stringify(a.endpoints) === JSON.stringify(b.endpoints) && a.prefix === b.prefix,
  connect: connectEtcdStore,
};

/** What {@link createEtcdStore} takes: the `registry.etcd.*` keys, the cluster, and the runtime. */
export type CreateEtcdStoreOptions = StoreFactoryOptions<EtcdOptions>;

/**
 * Connects an etcd record store directly, for `createRegistry(config, { store })` or for
 * tools; `createRegistry({ type: 'etcd', etcd: {...} })` is the usual way.
 * Options are validated as the configuration keys are (INVALID_CONFIG naming
 * the key); the connection is proven within `dialTimeoutMs`.
 */
export async function createEtcdStore(options: CreateEtcdStoreOptions = {}): Promise<EtcdStore> {
  return connectEtcdStore(pluginContext(registryPlugin, options));
}

export { EtcdStore } from './store.js';
export { etcdOptions, type EtcdOptions, type EtcdTlsOptions } from './options.js';
