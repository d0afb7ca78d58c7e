import type { Clock } from './clock.js';
import type { OptionSchema } from './config/option-schema.js';
import { nearMiss } from './config/near-miss.js';
import { ConfigurationError } from './errors.js';
import { installLine } from './install-line.js';
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
  /**
   * The registry writes nothing (`registry.readOnly`): the store must not create
   * a schema, purge, label or otherwise write on its own either. Default false.
   */
  readOnly?: boolean;
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
  /**
   * Whether two validated sections of this plugin name the same place, where
   * one cluster's records are the same records (two etcd sections with the
   * same endpoints and prefix). A store made of two (`@rollcall/migrate`) asks
   * it to refuse a backend named twice. Default: the sections are equal.
   */
  sameLocation?(a: Options, b: Options): boolean;
  /**
   * For a plugin made of other plugins (`@rollcall/migrate`), whose keys are
   * theirs: called with its section as given, before anything is validated;
   * it loads the plugins its section names and returns the plugin to validate
   * and connect with. Default: the plugin is used as it is.
   */
  compose?(context: PluginComposeContext): Promise<RegistryPlugin>;
}

/** Loads the plugin of a `registry.type` value; `key` is where the type was given, for errors. */
export type PluginLoader = (type: string, key: string) => Promise<RegistryPlugin>;

/** What {@link RegistryPlugin.compose} is given. */
export interface PluginComposeContext {
  /** A key of the plugin's section as given, relative to `registry.<type>.`, from any form (`read('from.type')`); undefined when not given. Not validated. */
  read(key: string): unknown;
  /** Loads a plugin as `registry.type` does: the built-in and given plugins first, then its package, lazily. */
  loadPlugin: PluginLoader;
}

/**
 * The backends `registry.type` knows without being told: each loads its
 * package lazily (`memory` ships with core).
 */
export const BUILTIN_BACKENDS = Object.freeze({
  memory: '@rollcall/core',
  kubernetes: '@rollcall/kubernetes',
  zookeeper: '@rollcall/zookeeper',
  etcd: '@rollcall/etcd',
  mysql: '@rollcall/mysql',
  postgres: '@rollcall/postgres',
  sqlite: '@rollcall/sqlite',
  migrate: '@rollcall/migrate',
} as const);

/** The package behind each built-in type. `memory` ships with core; `migrate` is a store made of two others. */
export const PLUGIN_PACKAGES: Readonly<Record<string, string>> = BUILTIN_BACKENDS;

/**
 * The package a failed import could not find, from Node's own error: the
 * specifier it names (`Cannot find package 'etcd3' imported from …`), cut to
 * the package name. Undefined for any other failure, and for a missing file
 * inside a package (a broken install, not a missing package).
 */
export function missingPackage(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return undefined;
  const specifier = /Cannot find (?:package|module) '([^']+)'/.exec(String((err as Error).message))?.[1];
  if (specifier === undefined || /^(\.|\/|file:|[A-Za-z]:[\\/])/.test(specifier)) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * Loads the plugin for `type` lazily. A type whose package is missing fails with
 * PLUGIN_NOT_INSTALLED and the exact install line (`installLine`); so does a plugin
 * whose own dependency is missing, naming that dependency.
 */
export async function loadPlugin(
  type: string,
  packages: Readonly<Record<string, string>> = PLUGIN_PACKAGES,
  builtins: readonly RegistryPlugin<never>[] = [],
  /** The key that named the type, for errors: `registry.type`, or a key of a composing plugin's section (`registry.migrate.from.type`). */
  key = 'registry.type',
): Promise<RegistryPlugin> {
  const builtin = builtins.find((p) => p.type === type);
  if (builtin) return builtin as unknown as RegistryPlugin;
  const pkg = packages[type];
  if (!pkg) {
    const guess = nearMiss(type, Object.keys(packages));
    throw new ConfigurationError(`${key}: unknown type ${JSON.stringify(type)}; ${guess ? `did you mean ${guess}? ` : ''}known types are ${Object.keys(packages).join(', ')}`, { key });
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pkg)) as Record<string, unknown>;
  } catch (err) {
    const missing = missingPackage(err);
    if (missing === pkg) {
      throw new ConfigurationError(`${key}=${type} needs the package ${pkg}, which is not installed. Run: ${installLine([pkg])}`, { key, code: 'PLUGIN_NOT_INSTALLED', cause: err });
    }
    if (missing !== undefined) {
      throw new ConfigurationError(`${key}=${type}: ${pkg} is installed, but its dependency ${missing} is not (a partial or pruned install). Run: ${installLine([missing])}`, {
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

/**
 * The plugin a configuration's `registry.type` names, loaded lazily, and
 * composed over the plugins its section names when it is made of others.
 * `read` gives a key of the configuration as given (`registry.migrate.from.type`).
 */
export async function loadConfiguredPlugin(type: string, read: (key: string) => unknown, builtins: readonly RegistryPlugin<never>[] = []): Promise<RegistryPlugin> {
  const load: PluginLoader = (t, key) => loadPlugin(t, PLUGIN_PACKAGES, builtins, key);
  const plugin = await load(type, 'registry.type');
  return plugin.compose ? plugin.compose({ read: (key) => read(`registry.${type}.${key}`), loadPlugin: load }) : plugin;
}
