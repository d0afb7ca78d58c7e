import { systemClock } from './clock.js';
import { configType, resolveConfig, type ConfigSource, type RegistryConfigInput } from './config/registry-config.js';
import { silentLogger } from './logger.js';
import { memoryPlugin } from './memory/memory-plugin.js';
import { loadPlugin, PLUGIN_PACKAGES, type RegistryPlugin } from './plugin.js';
import { Registry, type RegistryRuntime } from './registry.js';
import type { RecordStore } from './store.js';

export interface CreateRegistryRuntime extends RegistryRuntime {
  /** Plugins to use instead of loading a package, e.g. a third-party backend. */
  plugins?: readonly RegistryPlugin<never>[];
}

/**
 * Validates the configuration (object, flat or environment form), loads the
 * `registry.type` plugin lazily, connects, and resolves once the first list is
 * in. Everything is checked before anything is contacted.
 *
 * @example
 * const registry = await createRegistry({ type: 'kubernetes', cluster: 'orders', kubernetes: { namespace: 'prod' } });
 */
export async function createRegistry(source: ConfigSource, runtime: CreateRegistryRuntime = {}): Promise<Registry> {
  const type = configType(source);
  const plugin = await loadPlugin(type, PLUGIN_PACKAGES, [memoryPlugin, ...(runtime.plugins ?? [])]);
  const config = resolveConfig(source, plugin, Object.keys(PLUGIN_PACKAGES));
  const store = await plugin.connect({
    cluster: config.cluster,
    options: config.options,
    logger: runtime.logger ?? silentLogger,
    clock: runtime.clock ?? systemClock,
    requestTimeoutMs: config.requestTimeoutMs,
  });
  return Registry.open(store, config, runtime);
}

/** Opens a registry on a store you connected yourself; `config` is the object form without `type` or a backend section. */
export async function openRegistry(store: RecordStore, config: Omit<RegistryConfigInput, 'type'> = {}, runtime: RegistryRuntime = {}): Promise<Registry> {
  const resolved = resolveConfig({ ...config, type: store.backend }, { type: store.backend, options: {}, connect: async () => store });
  return Registry.open(store, resolved, runtime);
}
