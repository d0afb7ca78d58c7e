import { systemClock, type Clock } from './clock.js';
import { configType, loadRegistryConfig, resolveConfig, type ConfigSource } from './config/registry-config.js';
import { ConfigurationError } from './errors.js';
import { silentLogger, type Logger } from './logger.js';
import { memoryPlugin } from './memory/memory-plugin.js';
import { PLUGIN_PACKAGES, type RegistryPlugin } from './plugin.js';
import { Registry } from './registry.js';
import type { RecordStore } from './store.js';

/** What the process provides beyond the configuration. */
export interface RegistryRuntime {
  /** Where Rollcall logs; pino's shape. Default: nothing is logged. */
  logger?: Logger;
  /** Time source; tests inject a ManualClock (`@rollcall/core/testing`). Default: the system clock. */
  clock?: Clock;
  /** Plugins to use instead of loading a package, e.g. a third-party backend. Default: none. */
  plugins?: readonly RegistryPlugin<never>[];
  /**
   * A store connected already (a backend's `create…Store()`, or a MemoryStore in
   * tests), used instead of connecting one with the `registry.type` plugin;
   * `registry.type` must name the store's backend, and the configuration has no
   * backend section. The registry closes the store when it closes. Default: the
   * plugin connects one.
   */
  store?: RecordStore;
  /** How a lost member ends the process with `registry.member.afterLost=exit`; tests inject their own. Default `process.exit`. */
  exit?: (code: number) => void;
}

/**
 * The one way to open a registry. Validates the configuration (object, flat or
 * environment form, or layers: {@link configLayers}), loads the `registry.type` plugin lazily, connects, and
 * resolves once the first list is in. Everything is checked before anything is
 * contacted.
 *
 * @example
 * const registry = await createRegistry({ type: 'kubernetes', cluster: 'orders', kubernetes: { namespace: 'prod' } });
 * @example
 * // Phase 2 of a migration (with @rollcall/migrate installed): held on both, ZooKeeper first (see docs/migrating.md).
 * const registry = await createRegistry({ type: 'migrate', cluster: 'orders', migrate: {
 *   from: { type: 'zookeeper', zookeeper: { connectString: 'zk1:2181', openAcl: true } },
 *   to: { type: 'kubernetes', kubernetes: { namespace: 'prod' } } } });
 * @example
 * // On a store connected yourself:
 * const registry = await createRegistry({ type: 'etcd', cluster: 'orders' }, { store: await createEtcdStore(options) });
 */
export async function createRegistry(source: ConfigSource, runtime: RegistryRuntime = {}): Promise<Registry> {
  const logger = runtime.logger ?? silentLogger;
  const clock = runtime.clock ?? systemClock;
  const given = runtime.store;
  if (given) {
    const type = configType(source);
    if (type !== given.backend) throw new ConfigurationError(`registry.type: ${type}, but the store given is a ${given.backend} store`, { key: 'registry.type' });
    const config = resolveConfig(source, { type, options: {}, connect: async () => given }, Object.keys(PLUGIN_PACKAGES));
    return Registry.open(given, config, { clock, logger, exit: runtime.exit });
  }
  const { plugin, config } = await loadRegistryConfig(source, [memoryPlugin, ...(runtime.plugins ?? [])]);
  const store = await plugin.connect({ cluster: config.cluster, options: config.options, logger, clock, requestTimeoutMs: config.requestTimeoutMs, identity: config.identity, readOnly: config.readOnly });
  return Registry.open(store, config, { clock, logger, exit: runtime.exit });
}
