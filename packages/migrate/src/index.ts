import type { PluginComposeContext } from '@rollcall/core/admin';
import { ConfigurationError } from '@rollcall/core';
import { type PluginContext, type RegistryPlugin } from '@rollcall/core/spi';
import { assertMigrateTypes, MIGRATE_TYPE, migrateProblem, migrateSchema, type MigrateOptions, type MigrateSide, type Section } from './options.js';
import { MigrateStore } from './store.js';

/**
 * `@rollcall/migrate`: `registry.type=migrate`, one record store over two
 * backends, for a move between them by rolling restarts (docs/migrating.md).
 * Core loads it when `registry.type=migrate` is chosen, as it loads any backend.
 */
export { MigrateStore, type MigrateStoreOptions } from './store.js';
export { MIGRATE_TYPE, type MigrateOptions, type MigrateSide, type MigrateSideInput } from './options.js';

/**
 * The plugin of `registry.type=migrate` over the two sides' plugins: its
 * schema is `from.type`, `to.type` and each side's own section under
 * `from.<type>.` and `to.<type>.` (`REGISTRY_MIGRATE_FROM_ZOOKEEPER_CONNECT_STRING`
 * in the environment form); each side's rules apply to its section, and both
 * sides naming the same backend is INVALID_CONFIG.
 */
export function migratePlugin(from: RegistryPlugin, to: RegistryPlugin): RegistryPlugin<MigrateOptions> {
  const sides = { from, to } as const;
  return {
    type: MIGRATE_TYPE,
    options: migrateSchema(sides),
    validate: (resolved) => migrateProblem(sides, resolved),
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
