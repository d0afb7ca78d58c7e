import { readFileSync } from 'node:fs';
import { ConfigurationError, type Clock, type Logger } from '@rollcall/core';
import { acquireDatabase, SqlRecordStore, type SqlDatabase } from '@rollcall/sql';
import { MysqlDialect, type MysqlPoolConfig } from './dialect.js';
import { BACKEND } from './errors.js';
import type { MysqlOptions } from './options.js';

/** Written into the state row of a schema this package creates. */
export const CREATED_BY = '@rollcall/mysql 0.1.0';

/**
 * The record store on MySQL or MariaDB. Stores of one process with the same
 * connection settings share one pool and one change poller.
 */
export class MysqlStore extends SqlRecordStore {
  constructor(database: SqlDatabase, cluster: string, release: () => Promise<void>) {
    super(database, cluster, release);
  }
}

export interface MysqlStoreContext {
  cluster: string;
  options: MysqlOptions;
  /** Bound on each statement, milliseconds; also on retrying a contended transaction. */
  requestTimeoutMs: number;
  clock?: Clock;
  logger?: Logger;
}

function readPem(key: string, file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigurationError(`registry.mysql.${key}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
      backend: BACKEND,
      key: `registry.mysql.${key}`,
      cause: err,
    });
  }
}

/** `host:port` or the socket: how errors name the server. */
export function serverName(options: Pick<MysqlOptions, 'host' | 'port' | 'socketPath'>): string {
  return options.socketPath ?? `${options.host}:${options.port}`;
}

/** Connects a pool, checks (or creates) the schema and the user's rights, and returns a store for `cluster`. */
export async function createMysqlStore(context: MysqlStoreContext): Promise<MysqlStore> {
  const { options } = context;
  const ssl = options.tls.enabled
    ? {
        ca: readPem('tls.caFile', options.tls.caFile),
        cert: readPem('tls.certFile', options.tls.certFile),
        key: readPem('tls.keyFile', options.tls.keyFile),
        rejectUnauthorized: options.tls.rejectUnauthorized,
      }
    : undefined;
  const config: MysqlPoolConfig = {
    ...(options.socketPath ? { socketPath: options.socketPath } : { host: options.host, port: options.port }),
    user: options.user,
    password: options.password,
    database: options.database,
    connectionLimit: options.poolSize,
    connectTimeout: options.connectTimeoutMs,
    ...(ssl ? { ssl } : {}),
  };
  // Held in memory only (it has the password): stores with the same settings share a pool.
  const identity = JSON.stringify({ options, requestTimeoutMs: context.requestTimeoutMs });
  const { database, release } = await acquireDatabase(identity, () => ({
    ...options,
    dialect: new MysqlDialect(config, serverName(options), context.requestTimeoutMs),
    createdBy: CREATED_BY,
    requestTimeoutMs: context.requestTimeoutMs,
    clock: context.clock,
    logger: context.logger,
  }));
  return new MysqlStore(database, context.cluster, release);
}
