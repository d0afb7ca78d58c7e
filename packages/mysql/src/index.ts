import type { RegistryPlugin } from '@rollcall/core/spi';
import { mysqlOptionSchema, mysqlOptionsProblem, type MysqlOptions } from './options.js';
import { createMysqlStore } from './store.js';

export { mysqlOptionSchema, mysqlOptionsProblem, MYSQL_POLL_INTERVAL_MS, type MysqlOptions, type MysqlTlsOptions } from './options.js';
export { createMysqlStore, MysqlStore, CREATED_BY, serverName, type MysqlStoreContext } from './store.js';
export { MysqlDialect, schemaStatements, type MysqlPoolConfig } from './dialect.js';

/** `registry.type=mysql`: a registry in MySQL 8 or MariaDB tables, over a mysql2 pool. */
export const registryPlugin: RegistryPlugin<MysqlOptions> = {
  type: 'mysql',
  options: mysqlOptionSchema,
  validate: mysqlOptionsProblem,
  connect: ({ cluster, options, requestTimeoutMs, clock, logger }) => createMysqlStore({ cluster, options, requestTimeoutMs, clock, logger }),
};
