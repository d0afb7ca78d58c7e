import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { ConfigurationError } from '@rollcall/core';
import type { SqlValue } from '@rollcall/sql';
import { BACKEND, isBusy, toRegistryError } from './errors.js';

/** The slice of better-sqlite3 13.x this backend uses. */
export interface Statement {
  readonly reader: boolean;
  all(...params: SqlValue[]): unknown[];
  run(...params: SqlValue[]): { changes: number };
}

export interface Database {
  prepare(sql: string): Statement;
  exec(sql: string): void;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  close(): void;
  readonly inTransaction: boolean;
}

type DatabaseConstructor = new (path: string, options?: { timeout?: number; readonly?: boolean; fileMustExist?: boolean }) => Database;

// better-sqlite3 is CommonJS with a native addon.
const BetterSqlite3 = createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;

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

/**
 * Opens the file (creating it when missing) in WAL mode: one writer and many
 * readers across processes. `busyTimeoutMs` is how long one statement waits
 * for another process's lock. `readOnly` opens an existing file as it is,
 * changing nothing (not even its journal mode).
 */
export function openDatabase(path: string, busyTimeoutMs: number, readOnly = false): Database {
  try {
    if (readOnly) return new BetterSqlite3(path, { timeout: busyTimeoutMs, readonly: true, fileMustExist: true });
    const db = new BetterSqlite3(path, { timeout: busyTimeoutMs });
    // NORMAL is durable across a process crash. Switching a new file to WAL needs a moment alone with it: retry while another process has it.
    for (let attempt = 1; ; attempt++) {
      try {
        if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
        break;
      } catch (err) {
        if (!isBusy(err) || attempt >= 40) throw err;
      }
    }
    db.pragma('synchronous = NORMAL');
    return db;
  } catch (err) {
    throw addonError(err) ?? toRegistryError(err, 'open', path, readOnly);
  }
}

/**
 * better-sqlite3 (13 and later) loads a prebuilt Node-API addon from its package at the
 * first open, one binary for every Node.js version. A platform it ships none for needs
 * the addon compiled; one that does not load is the wrong build. Say what fixes it
 * rather than pass on a module-not-found.
 */
export function addonError(err: unknown): ConfigurationError | undefined {
  const message = err instanceof Error ? err.message : '';
  if (!message.includes('better_sqlite3.node')) return undefined;
  const options = { backend: BACKEND, key: 'registry.type', code: 'PLUGIN_NOT_INSTALLED' as const, cause: err };
  const code = (err as { code?: unknown }).code;
  if (code === 'MODULE_NOT_FOUND') {
    return new ConfigurationError(
      `better-sqlite3 ships no prebuilt addon for ${process.platform}-${process.arch} and none was compiled. Run: npm explore better-sqlite3 -- npm run build-release`,
      options,
    );
  }
  if (code === 'ERR_DLOPEN_FAILED') {
    return new ConfigurationError(`better-sqlite3's native addon does not load in Node.js ${process.version} on ${process.platform}-${process.arch}. Run: npm explore better-sqlite3 -- npm run build-release`, options);
  }
  return undefined;
}
