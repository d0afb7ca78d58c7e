import type { RegistryError } from '@rollcall/core';
import type { ChangeSignal } from './change-signal.js';
import type { TableNames } from './schema.js';

/** A bound parameter: everything Rollcall binds is a string, an integer or NULL. */
export type SqlValue = string | number | null;

/** One result row, by column name. Integers may come back as numbers, bigints or strings. */
export type SqlRow = Readonly<Record<string, unknown>>;

/** Runs statements with `?` placeholders, on one connection or any. */
export interface SqlExecutor {
  /** A statement that returns rows. */
  all(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
  /** A statement that changes rows; resolves to the number of rows it affected. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
}

/**
 * What the dialect-neutral store needs from a database. Everything else — the
 * schema's shape, compare-and-set, the change table, the poller, the purge — is
 * written once in @rollcall/sql with SQL that every dialect runs unchanged.
 */
export interface SqlDialect {
  /** `mysql`, `sqlite`: the backend name in error messages. */
  readonly backend: string;
  /**
   * A push signal of committed changes (PostgreSQL's LISTEN/NOTIFY). With one,
   * the change table is read when a write commits, and on the poll interval
   * only while the signal is down; without one, on the poll interval.
   */
  readonly changeSignal?: ChangeSignal;
  /**
   * `UPDATE … RETURNING` works (PostgreSQL, SQLite ≥ 3.35): an update reads the
   * columns it keeps in the same statement instead of one more SELECT, a round
   * trip saved on every heartbeat. Default false (MySQL, MariaDB).
   */
  readonly updateReturning?: boolean;
  /** Single statements outside a transaction. Each is a consistent read on its own. */
  readonly reader: SqlExecutor;
  /**
   * Runs `work` in one write transaction on one connection and commits it; rolls
   * back and rethrows when `work` throws. Nothing of the connection's session
   * outlives the call.
   */
  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /**
   * Adds one to the revision counter (the single row of the state table) and
   * returns the new value. The row lock it takes is held until the transaction
   * ends, so writers commit in revision order and the change table has no gaps.
   */
  nextRevision(tx: SqlExecutor, tables: TableNames): Promise<number>;
  /** The DDL of the schema, in order, each statement idempotent (`IF NOT EXISTS`). */
  schemaStatements(tables: TableNames): string[];
  /**
   * Runs the DDL and then `seed` (which writes the state row), as atomically as
   * the database allows: SQLite in one transaction; MySQL's DDL commits on its
   * own, so there the tables come first and the state row, which marks the
   * schema complete, last.
   */
  createSchema(statements: readonly string[], seed: (tx: SqlExecutor) => Promise<void>): Promise<void>;
  /** A unique-key violation: create found the row. */
  isDuplicateKey(error: unknown): boolean;
  /** The table does not exist. */
  isMissingTable(error: unknown): boolean;
  /** A column does not exist: a table of another layout. */
  isMissingColumn(error: unknown): boolean;
  /** A statement refused for lack of a privilege (or a read-only file). */
  isPermissionDenied(error: unknown): boolean;
  /** A failure that certainly changed nothing and may be retried at once: lock contention, a busy file. */
  isRetryable(error: unknown): boolean;
  /** Translates a native error into a RegistryError; `operation` says what was being done. */
  toRegistryError(error: unknown, operation: string): RegistryError;
  /** Releases every connection. */
  close(): Promise<void>;
}
