import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigurationError, ErrorCode, hasCode, RegistryError } from '@rollcall/core';
import { pluginContext, type PluginContext, type RegistryPlugin, type StoreFactoryOptions } from '@rollcall/core/spi';
import { acquireDatabase } from '@rollcall/sql';
import { resolveDatabasePath } from './client.js';
import { BACKEND } from './errors.js';
import { SqliteDialect } from './dialect.js';
import { sqliteOptions, type SqliteOptions } from './options.js';
import { SqliteStore } from './store.js';

/** Written into the state row of a schema this package creates. */
export const CREATED_BY = '@rollcall/sqlite 0.1.0';

/** Opens (creating when missing, unless `readOnly`) the database file and returns a store for the context's cluster. */
async function connectSqliteStore(context: PluginContext<SqliteOptions>): Promise<SqliteStore> {
  // registry.readOnly opens the file read-only too: then the OS refuses what the registry would not do.
  const options = context.readOnly ? { ...context.options, readOnly: true } : context.options;
  const key = context.options.readOnly ? 'registry.sqlite.readOnly' : 'registry.readOnly';
  if (options.readOnly && options.path === ':memory:') throw new ConfigurationError(`${key}: a :memory: database is empty and private to its connection; there is nothing to read`, { backend: BACKEND, key });
  // Read-only: a path that names nothing is the most common sqlite mistake; say so rather than show an empty registry.
  if (options.readOnly && !existsSync(resolve(options.path))) {
    throw new RegistryError(ErrorCode.NOT_FOUND, `registry.sqlite.path: ${resolve(options.path)} does not exist, so there is no registry to read (opened read-only, nothing was created); check the path, or start a process that announces, campaigns or locks on it first`, { backend: BACKEND });
  }
  const path = resolveDatabasePath(options.path);
  const { database, release } = await acquireDatabase(context, {
    identity: JSON.stringify({ ...options, path }),
    createdBy: CREATED_BY,
    readOnly: options.readOnly,
    dialect: () => new SqliteDialect({ path, busyTimeoutMs: options.busyTimeoutMs, readOnly: options.readOnly }),
  }).catch((err: unknown) => {
    if (options.readOnly && hasCode(err, ErrorCode.NOT_FOUND)) throw new RegistryError(ErrorCode.NOT_FOUND, `registry.sqlite.path: ${path} holds no Rollcall registry (${err.message.replace(/^\[rollcall\] \[\w+\] /, '')})`, { backend: BACKEND, cause: err });
    throw err;
  });
  return new SqliteStore(database, context.cluster, path, release);
}

/** `registry.type=sqlite`: a registry in a SQLite file shared by the processes of one host. */
export const registryPlugin: RegistryPlugin<SqliteOptions> = {
  type: 'sqlite',
  options: sqliteOptions,
  // Where the records live; the other keys only say how to get there.
  sameLocation: (a, b) => a.path === b.path && a.tablePrefix === b.tablePrefix,
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
