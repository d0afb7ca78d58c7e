import type { RegistryPlugin } from '@rollcall/core/spi';
import { validateZookeeperOptions, zookeeperOptionSchema, type ZookeeperOptions } from './options.js';
import { ZookeeperStore, type ZookeeperStoreOptions } from './store.js';

export { ZookeeperStore, ZOOKEEPER_MAX_PAYLOAD_BYTES, type ZookeeperStoreOptions } from './store.js';
export { zookeeperOptionSchema, parseConnectString, type ZookeeperOptions } from './options.js';
export { encodeKey, decodeKey } from './codec.js';

/** Connects a ZooKeeper record store for one cluster (what the plugin does for `registry.type=zookeeper`). */
export function createZookeeperStore(options: ZookeeperStoreOptions): Promise<ZookeeperStore> {
  return ZookeeperStore.connect(options);
}

/** `registry.type=zookeeper`. */
export const registryPlugin: RegistryPlugin<ZookeeperOptions> = {
  type: 'zookeeper',
  options: zookeeperOptionSchema,
  validate: validateZookeeperOptions,
  connect: ({ cluster, options, logger, clock, requestTimeoutMs }) =>
    ZookeeperStore.connect({ ...options, cluster, logger, clock, requestTimeoutMs }),
};
