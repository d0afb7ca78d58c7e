import { pluginContext, type PluginContext, type RegistryPlugin, type StoreFactoryOptions } from '@rollcall/core/spi';
import { acquireDatabase } from '@rollcall/sql';
import { resolveDatabasePath } from './client.js';
import { SqliteDialect } from './dialect.js';
import { sqliteOptions, type SqliteOptions } from './options.js';
import { SqliteStore } from './store.js';

/** Written into the state row of a schema this package creates. */
export const CREATED_BY = '@rollcall/sqlite 0.1.0';

/** Opens (creating when missing) the database file and returns a store for the context's cluster. */
async function connectSqliteStore(context: PluginContext<SqliteOptions>): Promise<SqliteStore> {
  const { options } = context;
  const path = resolveDatabasePath(options.path);
  const { database, release } = await acquireDatabase(context, {
    identity: JSON.stringify({ ...options, path }),
    createdBy: CREATED_BY,
    dialect: () => new SqliteDialect({ path, busyTimeoutMs: options.busyTimeoutMs }),
  });
  return new SqliteStore(database, context.cluster, path, release);
}

/** `registry.type=sqlite`: a registry in a SQLite file shared by the processes of one host. */
export const registryPlugin: RegistryPlugin<SqliteOptions> = {
  type: 'sqlite',
  options: sqliteOptions,
  connect: connectSqliteStore,
};

/** What {@link createSqliteStore} takes: the `registry.sqlite.*` keys, the cluster, and the runtime. */
export type CreateSqliteStoreOptions = StoreFactoryOptions<SqliteOptions>;

/**
 * Opens a SQLite record store directly, for `createRegistry(config, { store })` or for
 * tools; `createRegistry({ type: 'sqlite', sqlite: {...} })` is the usual way.
 */
export async function createSqliteStore(options: CreateSqliteStoreOptions = {}): Promise<SqliteStore> {
  return connectSqliteStore(pluginContext(registryPlugin, options));
}

export { SqliteStore } from './store.js';
export { sqliteOptions, type SqliteOptions } from './options.js';
export { schemaStatements } from './dialect.js';
