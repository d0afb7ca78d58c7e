import { pluginContext, type PluginContext, type RegistryPlugin, type StoreFactoryOptions } from '@rollcall/core/spi';
import { acquireDatabase, SqlRecordStore, tableNames, warnUnverifiedTls } from '@rollcall/sql';
import { pgConfig, serverName } from './client.js';
import { BACKEND } from './errors.js';
import { PostgresDialect } from './dialect.js';
import { postgresOptions, validatePostgresOptions, type PostgresOptions } from './options.js';

/** Written into the state row of a schema this package creates. */
export const CREATED_BY = '@rollcall/postgres 0.1.0';

/**
 * Connects a store for the context's cluster. Stores of one process with the
 * same settings share one pool, one listening connection and one change
 * poller; the first checks (or creates) the schema and the user's rights.
 */
async function connectPostgresStore(context: PluginContext<PostgresOptions>): Promise<SqlRecordStore> {
  const { options, requestTimeoutMs } = context;
  const config = pgConfig(options);
  warnUnverifiedTls(context.logger, BACKEND, options.tls);
  const { database, release } = await acquireDatabase(context, {
    // Held in memory only (it has the password).
    identity: JSON.stringify({ options, requestTimeoutMs }),
    createdBy: CREATED_BY,
    dialect: () =>
      new PostgresDialect(config, {
        where: serverName(options),
        database: config.database,
        schema: options.schema,
        poolSize: options.poolSize,
        requestTimeoutMs,
        // The trigger notifies TG_TABLE_NAME, the name as stored: unquoted names are folded to lower case.
        channel: tableNames(options.tablePrefix).changes.toLowerCase(),
        keepAliveIntervalMs: options.keepAliveIntervalMs,
        changeFeed: options.changeFeed,
        clock: context.clock,
      }),
  });
  return new SqlRecordStore(database, context.cluster, release);
}

/** `registry.type=postgres`: a registry in PostgreSQL tables over a pg pool, LISTEN/NOTIFY as the change feed. */
export const registryPlugin: RegistryPlugin<PostgresOptions> = {
  type: 'postgres',
  options: postgresOptions,
  validate: validatePostgresOptions,
  connect: connectPostgresStore,
};

/** What {@link createPostgresStore} takes: the `registry.postgres.*` keys, the cluster, and the runtime. */
export type CreatePostgresStoreOptions = StoreFactoryOptions<PostgresOptions>;

/**
 * Connects a PostgreSQL record store directly, for `createRegistry(config, { store })`
 * or for tools; `createRegistry({ type: 'postgres', postgres: {...} })` is the usual way.
 */
export async function createPostgresStore(options: CreatePostgresStoreOptions): Promise<SqlRecordStore> {
  return connectPostgresStore(pluginContext(registryPlugin, options));
}

export { postgresOptions, type PostgresOptions, type PostgresTlsOptions, postgresConnection, type PostgresConnection } from './options.js';
export { schemaStatements } from './dialect.js';
