export type { SqlDialect, SqlExecutor, SqlRow, SqlValue } from './dialect.js';
export { SCHEMA_VERSION, MAX_KEY_LENGTH, MAX_CLUSTER_LENGTH, TABLE_PREFIX_PATTERN, TABLE_PREFIX_RULE, schemaScript, tableNames, tablePrefixProblem, type TableNames } from './schema.js';
export { decodeRecord, encodeRecord, type Decoded } from './codec.js';
export { sqlOptionSchema, type SqlStoreOptions } from './options.js';
export { SqlDatabase, toInt, type SqlDatabaseOptions } from './sql-database.js';
export { ChangePoller, POLL_BATCH } from './change-poller.js';
export { SqlRecordStore, SQL_MAX_PAYLOAD_BYTES } from './sql-store.js';
export { acquireDatabase } from './shared.js';
