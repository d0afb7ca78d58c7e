import type { RegistryPlugin } from '@rollcall/core/spi';
import { sqliteOptionSchema, type SqliteOptions } from './options.js';
import { createSqliteStore } from './store.js';

export { sqliteOptionSchema, SQLITE_POLL_INTERVAL_MS, type SqliteOptions } from './options.js';
export { createSqliteStore, resolveDatabasePath, SqliteStore, CREATED_BY, type SqliteStoreContext } from './store.js';
export { SqliteDialect, schemaStatements, type SqliteDialectOptions } from './dialect.js';

/** `registry.type=sqlite`: a registry in a SQLite file shared by the processes of one host. */
export const registryPlugin: RegistryPlugin<SqliteOptions> = {
  type: 'sqlite',
  options: sqliteOptionSchema,
  connect: ({ cluster, options, requestTimeoutMs, clock, logger }) => createSqliteStore({ cluster, options, requestTimeoutMs, clock, logger }),
};
