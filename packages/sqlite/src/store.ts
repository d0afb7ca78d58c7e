import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigurationError, type Clock, type Logger } from '@rollcall/core';
import { acquireDatabase, SqlRecordStore, type SqlDatabase } from '@rollcall/sql';
import { SqliteDialect } from './dialect.js';
import { BACKEND } from './errors.js';
import type { SqliteOptions } from './options.js';

/** Written into the state row of a schema this package creates. */
export const CREATED_BY = '@rollcall/sqlite 0.1.0';

/**
 * The record store on a SQLite file. Stores of one process on the same file
 * share one connection and one change poller.
 */
export class SqliteStore extends SqlRecordStore {
  /** The absolute path of the database file. */
  readonly path: string;
  constructor(database: SqlDatabase, cluster: string, path: string, release: () => Promise<void>) {
    super(database, cluster, release);
    this.path = path;
  }
}

export interface SqliteStoreContext {
  cluster: string;
  options: SqliteOptions;
  requestTimeoutMs: number;
  clock?: Clock;
  logger?: Logger;
}

/** Resolves the file path; a missing directory is a configuration error, not a SQLite one. */
export function resolveDatabasePath(path: string): string {
  if (path === ':memory:') return path;
  const absolute = resolve(path);
  const dir = dirname(absolute);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new ConfigurationError(`registry.sqlite.path: the directory ${dir} does not exist; create it, or point the path elsewhere`, {
      backend: BACKEND,
      key: 'registry.sqlite.path',
    });
  }
  if (existsSync(absolute) && statSync(absolute).isDirectory()) {
    throw new ConfigurationError(`registry.sqlite.path: ${absolute} is a directory; name a file in it, e.g. ${absolute}/rollcall.db`, {
      backend: BACKEND,
      key: 'registry.sqlite.path',
    });
  }
  return absolute;
}

/** Opens (creating when missing) the database file and returns a connected store for `cluster`. */
export async function createSqliteStore(context: SqliteStoreContext): Promise<SqliteStore> {
  const { options } = context;
  const path = resolveDatabasePath(options.path);
  const identity = JSON.stringify({ ...options, path });
  const { database, release } = await acquireDatabase(identity, () => ({
    ...options,
    dialect: new SqliteDialect({ path, busyTimeoutMs: options.busyTimeoutMs }),
    createdBy: CREATED_BY,
    requestTimeoutMs: context.requestTimeoutMs,
    clock: context.clock,
    logger: context.logger,
  }));
  return new SqliteStore(database, context.cluster, path, release);
}
