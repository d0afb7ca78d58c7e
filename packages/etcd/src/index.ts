import type { Logger } from '@rollcall/core';
import type { RegistryPlugin } from '@rollcall/core/spi';
import { ETCD_OPTION_SCHEMA, resolveEtcdOptions, validateEtcdOptions, type EtcdOptions, type EtcdOptionsInput } from './options.js';
import { EtcdStore } from './store.js';

/** `registry.type=etcd`. Core loads it lazily by type. */
export const registryPlugin: RegistryPlugin<EtcdOptions> = {
  type: 'etcd',
  options: ETCD_OPTION_SCHEMA,
  validate: validateEtcdOptions,
  connect: ({ cluster, options, logger, requestTimeoutMs }) => EtcdStore.connect({ cluster, options, logger, requestTimeoutMs }),
};

/** Options of {@link createEtcdStore}: the `registry.etcd.*` keys plus the cluster. */
export interface CreateEtcdStoreOptions extends EtcdOptionsInput {
  /** The cluster: the store keeps the keys under `<prefix>/<cluster>/`. Default `default`. */
  cluster?: string;
  /** Bound on each call, milliseconds. Default 5000 (core's `registry.requestTimeoutMs` default). */
  requestTimeoutMs?: number;
  logger?: Logger;
}

/**
 * Connects an etcd record store directly, for `createRegistry(config, { store })` or for
 * tools; `createRegistry({ type: 'etcd', etcd: {...} })` is the usual way.
 * Options are validated as the configuration keys are (INVALID_CONFIG naming
 * the key); the connection is proven within `dialTimeoutMs`.
 */
export async function createEtcdStore(options: CreateEtcdStoreOptions = {}): Promise<EtcdStore> {
  const { cluster = 'default', requestTimeoutMs = 5000, logger, ...rest } = options;
  return EtcdStore.connect({ cluster, requestTimeoutMs, options: resolveEtcdOptions(rest), ...(logger ? { logger } : {}) });
}

export { EtcdStore, type EtcdStoreSettings, type EtcdClientSlice } from './store.js';
export { ETCD_OPTION_SCHEMA, type EtcdOptions, type EtcdOptionsInput, type EtcdTlsOptions } from './options.js';
