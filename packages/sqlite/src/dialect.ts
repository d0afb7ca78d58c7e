import type { SqlDialect, SqlExecutor, SqlRow, TableNames } from '@rollcall/sql';
import { openDatabase, type Database, type Statement } from './client.js';
import { BACKEND, isBusy, isDuplicateKey, isMissingColumn, isMissingTable, isPermissionDenied, toRegistryError } from './errors.js';

export interface SqliteDialectOptions {
  /** Absolute path of the file, or `:memory:`. */
  path: string;
  busyTimeoutMs: number;
  /** Opens the file read-only; it must exist. Default false. */
  readOnly?: boolean;
}

/**
 * SQLite through one better-sqlite3 connection per process and file. Calls are
 * synchronous, so a queue keeps each transaction whole against the other calls
 * of this process; other processes are kept out by SQLite's own locks (WAL
 * mode: readers never block the one writer), with `BEGIN IMMEDIATE` taking the
 * write lock up front so no transaction has to upgrade halfway and deadlock.
 */
export class SqliteDialect implements SqlDialect {
  readonly backend = BACKEND;
  readonly updateReturning = true;
  readonly reader: SqlExecutor;
  private readonly db: Database;
  private readonly statements = new Map<string, Statement>();
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: SqliteDialectOptions) {
    this.db = openDatabase(options.path, options.busyTimeoutMs, options.readOnly ?? false);
    const direct = this.executor();
    this.reader = {
      all: (sql, params) => this.serialized(() => direct.all(sql, params)),
      run: (sql, params) => this.serialized(() => direct.run(sql, params)),
    };
  }

  transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.serialized(async () => {
      this.exec('BEGIN IMMEDIATE');
      try {
        const result = await work(this.executor());
        this.exec('COMMIT');
        return result;
      } catch (err) {
        if (this.db.inTransaction) this.exec('ROLLBACK');
        throw err;
      }
    });
  }

  async nextRevision(tx: SqlExecutor, tables: TableNames): Promise<number> {
    const rows = await tx.all(`UPDATE ${tables.state} SET revision = revision + 1 WHERE id = 1 RETURNING revision`);
    const revision = Number(rows[0]?.revision);
    if (!Number.isSafeInteger(revision)) throw new Error(`the state row of ${tables.state} is missing`);
    return revision;
  }

  schemaStatements(tables: TableNames): string[] {
    return schemaStatements(tables);
  }

  createSchema(statements: readonly string[], seed: (tx: SqlExecutor) => Promise<void>): Promise<void> {
    // SQLite's DDL is transactional: the tables and the state row appear together or not at all.
    return this.transaction(async (tx) => {
      for (const sql of statements) this.exec(sql);
      await seed(tx);
    });
  }

  isDuplicateKey = isDuplicateKey;
  isMissingTable = isMissingTable;
  isMissingColumn = isMissingColumn;
  isPermissionDenied = isPermissionDenied;
  isRetryable = isBusy;

  toRegistryError(error: unknown, operation: string) {
    return toRegistryError(error, operation, this.options.path, this.options.readOnly ?? false);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.catch(() => undefined);
    this.db.close();
  }

  private executor(): SqlExecutor {
    return {
      all: async (sql, params = []) => this.prepare(sql).all(...params) as SqlRow[],
      run: async (sql, params = []) => this.prepare(sql).run(...params).changes,
    };
  }

  private exec(sql: string): void {
    this.db.exec(sql);
  }

  private prepare(sql: string): Statement {
    if (this.closed) throw new Error('the database is closed');
    let statement = this.statements.get(sql);
    if (!statement) this.statements.set(sql, (statement = this.db.prepare(sql)));
    return statement;
  }

  /** Runs `work` when every earlier call of this process is done. */
  private serialized<T>(work: () => Promise<T> | T): Promise<T> {
    const run = this.queue.then(() => work());
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/** The DDL of the schema for this dialect, each statement idempotent. Also the content of schema.sql. */
export function schemaStatements(t: TableNames): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.state} (\n  id INTEGER NOT NULL PRIMARY KEY,\n  schema_version INTEGER NOT NULL,\n  revision INTEGER NOT NULL,\n  purged_through INTEGER NOT NULL,\n  created_by TEXT NOT NULL\n)`,
    `CREATE TABLE IF NOT EXISTS ${t.records} (\n  cluster_name TEXT NOT NULL,\n  record_key TEXT NOT NULL,\n  record_version INTEGER NOT NULL,\n  record_value TEXT NOT NULL,\n  created_revision INTEGER,\n  PRIMARY KEY (cluster_name, record_key)\n) WITHOUT ROWID`,
    `CREATE TABLE IF NOT EXISTS ${t.changes} (\n  id INTEGER NOT NULL PRIMARY KEY,\n  cluster_name TEXT NOT NULL,\n  record_key TEXT NOT NULL,\n  record_version INTEGER NOT NULL,\n  record_value TEXT,\n  created_ms INTEGER NOT NULL,\n  created_revision INTEGER\n)`,
    `CREATE INDEX IF NOT EXISTS ${t.changes}_created ON ${t.changes} (created_ms)`,
  ];
}
