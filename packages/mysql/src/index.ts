import { pluginContext, type PluginContext, type RegistryPlugin, type StoreFactoryOptions } from '@rollcall/core/spi';
import { acquireDatabase, SqlRecordStore, warnUnverifiedTls } from '@rollcall/sql';
import { poolConfig, serverName } from './client.js';
import { BACKEND } from './errors.js';
import { MysqlDialect } from './dialect.js';
import { mysqlOptions, validateMysqlOptions, type MysqlOptions } from './options.js';

/** Written into the state row of a schema this package creates. */
export const CREATED_BY = '@rollcall/mysql 0.1.0';

/**
 * Connects a store for the context's cluster. Stores of one process with the
 * same settings share one pool and one change poller; the first checks (or
 * creates) the schema and the user's rights.
 */
async function connectMysqlStore(context: PluginContext<MysqlOptions>): Promise<SqlRecordStore> {
  const { options, requestTimeoutMs } = context;
  const config = poolConfig(options);
  warnUnverifiedTls(context.logger, BACKEND, options.tls);
  const { database, release } = await acquireDatabase(context, {
    // Held in memory only (it has the password).
    identity: JSON.stringify({ options, requestTimeoutMs }),
    createdBy: CREATED_BY,
    dialect: () => new MysqlDialect(config, serverName(options), requestTimeoutMs),
  });
  return new SqlRecordStore(database, context.cluster, release);
}

/** `registry.type=mysql`: a registry in MySQL 8 or MariaDB tables, over a mysql2 pool. */
export const registryPlugin: RegistryPlugin<MysqlOptions> = {
  type: 'mysql',
  options: mysqlOptions,
  validate: validateMysqlOptions,
  // Where the records live; the other keys only say how to get there.
  sameLocation: (a, b) => a.host === b.host && a.port === b.port && a.socketPath === b.socketPath && a.database === b.database && a.tablePrefix === b.tablePrefix,
  connect: connectMysqlStore,
};

/** What {@link createMysqlStore} takes: the `registry.mysql.*` keys, the cluster, and the runtime. */
export type CreateMysqlStoreOptions = StoreFactoryOptions<MysqlOptions>;

/**
 * Connects a MySQL or MariaDB record store directly, for `createRegistry(config, { store })`
 * or for tools; `createRegistry({ type: 'mysql', mysql: {...} })` is the usual way.
 */
export async function createMysqlStore(options: CreateMysqlStoreOptions): Promise<SqlRecordStore> {
  return connectMysqlStore(pluginContext(registryPlugin, options));
}

export { mysqlOptions, type MysqlOptions, type MysqlTlsOptions } from './options.js';
export { schemaStatements } from './dialect.js';
