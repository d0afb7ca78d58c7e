export type { SqlDialect, SqlExecutor, SqlRow, SqlValue } from './dialect.js';
export type { ChangeSignal, ChangeSignalHandlers } from './change-signal.js';
export { schemaScript, SCHEMA_VERSION, tableNames, type TableNames } from './schema.js';
export { sqlOptions, type SqlOptions } from './options.js';
export { SqlRecordStore, SQL_MAX_PAYLOAD_BYTES } from './store.js';
export type { SqlDatabase } from './database.js';
export { acquireDatabase, type DatabaseSource } from './shared-database.js';
export { readTlsFiles, sqlTlsOptions, tlsOptionsProblem, warnUnverifiedTls, type SqlTlsOptions, type TlsFiles } from './tls.js';
