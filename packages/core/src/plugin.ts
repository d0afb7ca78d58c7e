import type { Clock } from './clock.js';
import type { OptionSchema } from './config/option-schema.js';
import { ConfigurationError } from './errors.js';
import type { Logger } from './logger.js';
import type { RecordStore } from './store.js';

/** What a plugin's `connect` is given. */
export interface PluginContext<Options = Readonly<Record<string, unknown>>> {
  /** The cluster: every record the store keeps is this cluster's. */
  cluster: string;
  /** The plugin's own section (`registry.<type>.*`), validated against its schema and frozen. */
  options: Options;
  logger: Logger;
  clock: Clock;
  /** Bound on each call, milliseconds; a store may also use it for connecting. */
  requestTimeoutMs: number;
  /**
   * This process's identity (`registry.identity`), for a backend that names its
   * client to the server (Kubernetes: the User-Agent). Absent when a store is
   * opened directly by its factory.
   */
  identity?: string;
}

/**
 * A backend, as `registry.type` loads it. A plugin package exports it as
 * `registryPlugin`; core loads the package only when its type is chosen.
 */
export interface RegistryPlugin<Options = Readonly<Record<string, unknown>>> {
  /** The `registry.type` value, e.g. `kubernetes`. */
  readonly type: string;
  /** The keys of its section, relative to `registry.<type>.`. */
  readonly options: OptionSchema;
  /** Optional cross-key rules; returns the broken rule and its key. */
  validate?(options: Options): { key: string; rule: string } | undefined;
  /** Connects a store; rejects with UNAVAILABLE, UNAUTHENTICATED, PERMISSION_DENIED or INVALID_CONFIG. */
  connect(context: PluginContext<Options>): Promise<RecordStore>;
}

/** The package behind each built-in type. `memory` ships with core. */
export const PLUGIN_PACKAGES: Readonly<Record<string, string>> = Object.freeze({
  memory: '@rollcall/core',
  kubernetes: '@rollcall/kubernetes',
  zookeeper: '@rollcall/zookeeper',
  etcd: '@rollcall/etcd',
  mysql: '@rollcall/mysql',
  sqlite: '@rollcall/sqlite',
});

/**
 * Loads the plugin for `type` lazily. A type whose package is missing fails with
 * PLUGIN_NOT_INSTALLED and the exact `npm install` line.
 */
export async function loadPlugin(
  type: string,
  packages: Readonly<Record<string, string>> = PLUGIN_PACKAGES,
  builtins: readonly RegistryPlugin<never>[] = [],
  /** The key that named the type, for errors: `registry.type`, or `registry.migrate.from.type`. */
  key = 'registry.type',
): Promise<RegistryPlugin> {
  const builtin = builtins.find((p) => p.type === type);
  if (builtin) return builtin as unknown as RegistryPlugin;
  const pkg = packages[type];
  if (!pkg) {
    throw new ConfigurationError(`${key}: unknown type ${JSON.stringify(type)}; known types are ${Object.keys(packages).join(', ')}`, { key });
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pkg)) as Record<string, unknown>;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if ((code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((err as Error).message).includes(pkg)) {
      throw new ConfigurationError(`${key}=${type} needs the package ${pkg}, which is not installed. Run: npm install ${pkg}`, {
        key,
        code: 'PLUGIN_NOT_INSTALLED',
        cause: err,
      });
    }
    throw new ConfigurationError(`${key}=${type}: loading ${pkg} failed: ${(err as Error).message}`, { key, cause: err });
  }
  const plugin = mod.registryPlugin as RegistryPlugin | undefined;
  if (plugin?.type !== type) throw new ConfigurationError(`${key}=${type}: ${pkg} does not export a registry plugin for ${type}`, { key });
  return plugin;
}
