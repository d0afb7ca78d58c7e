import { envName } from '@rollcall/core';
import type { PluginComposeContext } from '@rollcall/core/admin';
import { ConfigurationError, type OptionSchema, type PluginContext, type RegistryPlugin } from '@rollcall/core/spi';
import { MigrateStore } from './migrate-store.js';

/** `registry.type` of a migration. */
export const MIGRATE_TYPE = 'migrate';

/** One side of a migration, validated: a whole backend section, `{ type, <type>: { ... } }`. */
export interface MigrateSide {
  readonly type: string;
  readonly [section: string]: unknown;
}

/** `registry.migrate.*`: the backend being left and the one being moved to. */
export interface MigrateOptions {
  readonly from: MigrateSide;
  readonly to: MigrateSide;
}

/** One side of a migration as given: `type` and that backend's section, e.g. `{ type: 'zookeeper', zookeeper: { connectString } }`. */
export type MigrateSideInput = { readonly type: string } & Readonly<Record<string, unknown>>;

declare module '@rollcall/core' {
  /** `migrate: { from, to }` in the object form, typed once this package is part of a program. */
  interface RegistryBackendSections {
    /** `registry.type=migrate`: two whole backend sections, each checked by its own plugin at run time. */
    migrate: { from: MigrateSideInput; to: MigrateSideInput };
  }
}

type Section = Readonly<Record<string, unknown>>;

/** Two sides of one type are one backend when its plugin says they are the same location; without `sameLocation`, when the sections are equal. */
function sameBackend(plugin: RegistryPlugin, from: MigrateSide, to: MigrateSide): boolean {
  if (from.type !== to.type) return false;
  const a = (from[from.type] ?? {}) as Section;
  const b = (to[to.type] ?? {}) as Section;
  if (plugin.sameLocation) return plugin.sameLocation(a, b);
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].every((key) => JSON.stringify(a[key]) === JSON.stringify(b[key]));
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
        const problem = plugin.validate?.((resolved[side][plugin.type] ?? {}) as Section);
        if (problem) return { key: `${side}.${plugin.type}.${problem.key}`, rule: problem.rule };
      }
      if (sameBackend(from, resolved.from, resolved.to)) {
        const how = from.sameLocation ? `the same ${from.type} location, as its plugin judges it` : `the same ${from.type} section`;
        return { key: 'to', rule: `names the same backend as registry.migrate.from (${how}); a migration moves records between two backends` };
      }
      return undefined;
    },
    async connect(context: PluginContext<MigrateOptions>) {
      const side = (plugin: RegistryPlugin, section: MigrateSide) => plugin.connect({ ...context, options: (section[plugin.type] ?? {}) as Section });
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
 * `registry.type=migrate` as core loads it: before the configuration is
 * validated, it loads the two sides' plugins (`registry.migrate.from.type`,
 * `registry.migrate.to.type`, from any form) through the loader core gives it,
 * and becomes {@link migratePlugin} over them.
 */
export const registryPlugin: RegistryPlugin = {
  type: MIGRATE_TYPE,
  options: Object.freeze({
    'from.type': { type: 'string', required: true, doc: 'The backend to migrate from.' },
    'to.type': { type: 'string', required: true, doc: 'The backend to migrate to.' },
  }),
  async compose({ read, loadPlugin }: PluginComposeContext) {
    const types = { from: read('from.type'), to: read('to.type') };
    assertMigrateTypes(types);
    const key = (side: string) => `registry.${MIGRATE_TYPE}.${side}.type`;
    const [from, to] = await Promise.all([loadPlugin(types.from, key('from')), loadPlugin(types.to, key('to'))]);
    return migratePlugin(from, to) as unknown as RegistryPlugin;
  },
  connect: () => Promise.reject(new ConfigurationError('registry.type=migrate: its sides are not loaded; open it with createRegistry(), which composes it over them', { key: 'registry.type' })),
};
