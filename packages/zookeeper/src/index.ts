import { pluginContext, type RegistryPlugin, type StoreFactoryOptions } from '@rollcall/core/spi';
import { validateZookeeperOptions, zookeeperOptions, type ZookeeperOptions } from './options.js';
import { connectZookeeperStore, type ZookeeperStore } from './store.js';

/** `registry.type=zookeeper`. Core loads it lazily by type. */
export const registryPlugin: RegistryPlugin<ZookeeperOptions> = {
  type: 'zookeeper',
  options: zookeeperOptions,
  validate: validateZookeeperOptions,
  // Where the records live; the other keys only say how to get there.
  sameLocation: (a, b) => a.connectString === b.connectString && a.root === b.root,
  connect: connectZookeeperStore,
};

/** What {@link createZookeeperStore} takes: the `registry.zookeeper.*` keys, the cluster, and the runtime. */
export type CreateZookeeperStoreOptions = StoreFactoryOptions<ZookeeperOptions>;

/**
 * Connects a ZooKeeper record store directly, for `createRegistry(config, { store })` or for
 * tools; `createRegistry({ type: 'zookeeper', zookeeper: {...} })` is the usual way.
 */
export async function createZookeeperStore(options: CreateZookeeperStoreOptions): Promise<ZookeeperStore> {
  return connectZookeeperStore(pluginContext(registryPlugin, options));
}

export { ZookeeperStore, ZOOKEEPER_MAX_PAYLOAD_BYTES } from './store.js';
export { zookeeperOptions, parseConnectString, type ZookeeperOptions } from './options.js';
export { encodeKey, decodeKey } from './codec.js';
