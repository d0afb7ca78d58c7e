import { ConfigurationError } from '../errors.js';
import { envName, type OptionSchema } from '../config/option-schema.js';
import { loadPlugin, PLUGIN_PACKAGES, type PluginContext, type RegistryPlugin } from '../plugin.js';
import { MigrateStore } from './migrate-store.js';

/** `registry.type` of a migration. */
export const MIGRATE_TYPE = 'migrate';

/** One side of a migration: a whole backend section, `{ type, <type>: { ... } }`. */
export interface BackendSection {
  readonly type: string;
  readonly [section: string]: unknown;
}

/** `registry.migrate.*`: the backend being left and the one being moved to. */
export interface MigrateOptions {
  readonly from: BackendSection;
  readonly to: BackendSection;
}

/**
 * The keys that say where a built-in backend keeps its records: two sides of
 * one type with the same values here are the same backend named twice. A type
 * not listed is the same backend when its whole section is the same.
 */
const LOCATION_KEYS: Readonly<Record<string, readonly string[]>> = {
  memory: ['name'],
  zookeeper: ['connectString', 'root'],
  etcd: ['endpoints', 'prefix'],
  mysql: ['host', 'port', 'socketPath', 'database', 'tablePrefix'],
  sqlite: ['path', 'tablePrefix'],
  kubernetes: ['kubeconfig', 'context', 'namespace'],
};

function sameBackend(from: BackendSection, to: BackendSection): boolean {
  if (from.type !== to.type) return false;
  const a = (from[from.type] ?? {}) as Record<string, unknown>;
  const b = (to[to.type] ?? {}) as Record<string, unknown>;
  const keys = LOCATION_KEYS[from.type] ?? [...new Set([...Object.keys(a), ...Object.keys(b)])];
  return keys.every((key) => JSON.stringify(a[key]) === JSON.stringify(b[key]));
}

/**
 * Checks the two types a migration names, before their plugins load: each is
 * given, neither is `migrate` itself. Throws INVALID_CONFIG naming the key.
 */
export function assertMigrateTypes(types: { from: unknown; to: unknown }): asserts types is { from: string; to: string } {
  for (const side of ['from', 'to'] as const) {
    const key = `registry.${MIGRATE_TYPE}.${side}.type`;
    const type = types[side];
    if (type === undefined || type === '') throw new ConfigurationError(`${key}: is required: the backend to migrate ${side} (${envName(key)} in the environment form)`, { key });
    if (typeof type !== 'string') throw new ConfigurationError(`${key}: expected a string, got ${JSON.stringify(type)}`, { key });
    if (type === MIGRATE_TYPE) throw new ConfigurationError(`${key}: a migration cannot migrate ${side} a migration; name the backend itself`, { key });
  }
}

/**
 * The plugin of `registry.type=migrate` over the two sides' plugins: its
 * schema is `from.type`, `to.type` and each side's own section under
 * `from.<type>.` and `to.<type>.` (`REGISTRY_MIGRATE_FROM_ZOOKEEPER_CONNECT_STRING`
 * in the environment form); each side's rules apply to its section, and both
 * sides naming the same backend is INVALID_CONFIG.
 */
export function migratePlugin(from: RegistryPlugin, to: RegistryPlugin): RegistryPlugin<MigrateOptions> {
  const options: Record<string, OptionSchema[string]> = {};
  const sides = { from, to } as const;
  for (const [side, plugin] of Object.entries(sides)) {
    options[`${side}.type`] = { type: 'enum', values: [plugin.type], required: true, doc: `The backend to migrate ${side}.` };
    for (const [key, spec] of Object.entries(plugin.options)) options[`${side}.${plugin.type}.${key}`] = spec;
  }
  return {
    type: MIGRATE_TYPE,
    options: Object.freeze(options),
    validate(resolved) {
      for (const [side, plugin] of Object.entries(sides) as [keyof MigrateOptions, RegistryPlugin][]) {
        const problem = plugin.validate?.((resolved[side][plugin.type] ?? {}) as Readonly<Record<string, unknown>>);
        if (problem) return { key: `${side}.${plugin.type}.${problem.key}`, rule: problem.rule };
      }
      if (sameBackend(resolved.from, resolved.to)) {
        const where = LOCATION_KEYS[from.type]?.map((k) => `${from.type}.${k}`).join(', ') ?? `the whole ${from.type} section`;
        return { key: 'to', rule: `names the same backend as registry.migrate.from (same type and the same ${where}); a migration moves records between two backends` };
      }
      return undefined;
    },
    async connect(context: PluginContext<MigrateOptions>) {
      const side = (plugin: RegistryPlugin, section: BackendSection) => plugin.connect({ ...context, options: (section[plugin.type] ?? {}) as Readonly<Record<string, unknown>> });
      const fromStore = await side(from, context.options.from);
      try {
        return new MigrateStore(fromStore, await side(to, context.options.to), { clock: context.clock });
      } catch (err) {
        await fromStore.close().catch(() => {});
        throw err;
      }
    },
  };
}

/**
 * Loads both sides' plugins lazily (as `registry.type` loads one) and returns
 * the migrate plugin over them. `types` are `registry.migrate.from.type` and
 * `registry.migrate.to.type` as given.
 */
export async function loadMigratePlugin(types: { from: unknown; to: unknown }, builtins: readonly RegistryPlugin<never>[] = []): Promise<RegistryPlugin> {
  assertMigrateTypes(types);
  const key = (side: string) => `registry.${MIGRATE_TYPE}.${side}.type`;
  const [from, to] = await Promise.all([loadPlugin(types.from, PLUGIN_PACKAGES, builtins, key('from')), loadPlugin(types.to, PLUGIN_PACKAGES, builtins, key('to'))]);
  return migratePlugin(from, to) as unknown as RegistryPlugin;
}
