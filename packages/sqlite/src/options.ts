import type { PluginOptionsInput } from '@rollcall/core';
import type { OptionSchema } from '@rollcall/core/spi';
import { sqlOptions, type SqlOptions } from '@rollcall/sql';

/** `registry.sqlite.*`: the database file, and the keys every SQL backend has. */
export interface SqliteOptions extends SqlOptions {
  /**
   * The database file, created when missing (its directory must exist). A
   * relative path is resolved against the working directory. Every process
   * that names the same file on the same host shares the registry. Keep it on
   * a local disk: SQLite's locking is not safe over NFS or SMB.
   * Default `rollcall.db`.
   */
  readonly path: string;
  /**
   * How long one statement waits for another process's write lock before the
   * store backs off and retries (until `registry.requestTimeoutMs`), in
   * milliseconds. A wait blocks this process's event loop, so keep it short.
   * Default 50.
   */
  readonly busyTimeoutMs: number;
  /** How often the change table is read for the watch, milliseconds. Default 100. */
  readonly pollIntervalMs: number;
  /**
   * Opens the file read-only and never creates it, nor its schema: for tools
   * that only look (`rollcall members`, `leader`, `locks`, `watch`, `doctor`,
   * `migrate status` set it). A missing file, or one without Rollcall's
   * tables, is NOT_FOUND naming the path; a write (announce, campaign, lock)
   * is PERMISSION_DENIED. Nothing is purged. Default false.
   */
  readonly readOnly: boolean;
}

/** The default poll interval: a local file is cheap to read. */
export const SQLITE_POLL_INTERVAL_MS = 100;

/** The `registry.sqlite.*` keys. */
export const sqliteOptions: OptionSchema = {
  path: {
    type: 'string',
    default: 'rollcall.db',
    doc: 'The SQLite database file (created when missing; relative paths from the working directory). Processes naming the same file share the registry. Local disks only.',
    check: (v) => (v.trim() === '' ? 'must not be empty' : v.includes('\0') ? 'must not contain NUL' : undefined),
  },
  busyTimeoutMs: { type: 'integer', default: 50, min: 0, max: 10_000, doc: 'Wait for another process\'s write lock per attempt, ms, before backing off and retrying. Default 50.' },
  ...sqlOptions({ pollIntervalMs: SQLITE_POLL_INTERVAL_MS }),
  readOnly: {
    type: 'boolean',
    default: false,
    doc: 'Open the file read-only, never creating it or its tables (a missing file is NOT_FOUND); writes are PERMISSION_DENIED. The CLI\'s read commands set it. Default false.',
  },
};

declare module '@rollcall/core' {
  /** `sqlite: { ... }` in the object form, typed by this package: a misspelt key fails to compile. */
  interface RegistryBackendSections {
    sqlite: PluginOptionsInput<SqliteOptions>;
  }
}
