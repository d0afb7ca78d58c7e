import type { Clock } from '@rollcall/core';
import type { SqlDialect, SqlExecutor, SqlRow, SqlValue, TableNames } from '@rollcall/sql';
import { createPool, numberedPlaceholders, type PgConfig, type Pool, type Queryable } from './client.js';
import { BACKEND, isConnectionBroken, isDuplicateKey, isMissingColumn, isMissingTable, isPermissionDenied, isRetryable, toRegistryError } from './errors.js';
import { NotifyListener } from './watch.js';

/** What the dialect needs besides the connection settings. */
export interface PostgresDialectOptions {
  /** `host:port`, for error messages. */
  where: string;
  /** The database and schema, for error messages. */
  database: string;
  schema: string;
  poolSize: number;
  /** Bound on every statement, milliseconds (the server's statement_timeout, and the client's). */
  requestTimeoutMs: number;
  /** The NOTIFY channel of the change table. */
  channel: string;
  keepAliveIntervalMs: number;
  /** `poll`: no listening connection, the poller reads on its interval. */
  changeFeed: 'listen' | 'poll';
  /** The listening connection's keep-alives and reconnects are timed on it. */
  clock: Clock;
}

/**
 * PostgreSQL through a pg pool. Every call borrows a connection for one
 * statement or one transaction and gives it back clean. A trigger on the
 * change table notifies the channel named after it (delivered at commit, also
 * for a row written by hand); one connection outside the pool LISTENs, so the
 * change table is read when something was written.
 */
export class PostgresDialect implements SqlDialect {
  readonly backend = BACKEND;
  readonly updateReturning = true;
  readonly reader: SqlExecutor;
  /** The LISTEN connection; none with `changeFeed: poll`, and the poller then reads on its interval. */
  readonly changeSignal: NotifyListener | undefined;
  private readonly pool: Pool;
  private closed = false;

  constructor(
    config: PgConfig,
    private readonly options: PostgresDialectOptions,
  ) {
    const timeouts = {
      // The server ends a statement, and a transaction left idle by a client that paused or
      // vanished holding the state row's lock, after the request timeout.
      statement_timeout: options.requestTimeoutMs,
      idle_in_transaction_session_timeout: Math.max(1000, options.requestTimeoutMs),
      // The client stops waiting too, for a server that does not answer at all.
      query_timeout: options.requestTimeoutMs,
    };
    this.pool = createPool({ ...config, ...timeouts, max: options.poolSize, idleTimeoutMillis: 60_000 });
    // An idle connection the server dropped surfaces here; the pool replaces it.
    this.pool.on('error', () => undefined);
    this.reader = executor(this.pool);
    this.changeSignal = options.changeFeed === 'listen' ? new NotifyListener({ ...config, ...timeouts }, options.channel, options.keepAliveIntervalMs, options.clock) : undefined;
  }

  async transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    // A borrowed connection that breaks emits 'error' besides failing its query; the pool
    // listens only while it is idle, and an unheard 'error' would end the process.
    const onError = (err: unknown) => {
      broken ??= err instanceof Error ? err : new Error(String(err));
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      try {
        const result = await work(executor(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch((rollbackError: unknown) => {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        });
        throw err;
      }
    } catch (err) {
      if (isConnectionBroken(err)) broken ??= err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      // A connection whose transaction state is unknown never goes back to the pool.
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  async nextRevision(tx: SqlExecutor, tables: TableNames): Promise<number> {
    // One round trip. The change row this transaction appends notifies through the table's trigger.
    const rows = await tx.all(`UPDATE ${tables.state} SET revision = revision + 1 WHERE id = 1 RETURNING revision`);
    if (rows.length !== 1) throw new Error(`the state row of ${tables.state} is missing`);
    return Number(rows[0]!.revision);
  }

  schemaStatements(tables: TableNames): string[] {
    return schemaStatements(tables);
  }

  async createSchema(statements: readonly string[], seed: (tx: SqlExecutor) => Promise<void>): Promise<void> {
    // PostgreSQL's DDL is transactional: the tables and the state row appear together or not at all.
    await this.transaction(async (tx) => {
      // Creators in other processes wait here, then find every object there: CREATE OR REPLACE of the
      // trigger function is not safe to run concurrently. Released at commit.
      await tx.all(`SELECT pg_advisory_xact_lock(hashtext('rollcall schema'))`);
      for (const sql of statements) await tx.run(sql);
      await seed(tx);
    });
  }

  isDuplicateKey = isDuplicateKey;
  isMissingTable = isMissingTable;
  isMissingColumn = isMissingColumn;
  isPermissionDenied = isPermissionDenied;
  isRetryable = isRetryable;

  toRegistryError(error: unknown, operation: string) {
    return toRegistryError(error, operation, this.options.where, this.options.database, this.options.schema);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.changeSignal?.close();
    await this.pool.end().catch(() => undefined);
  }
}

function executor(target: Queryable): SqlExecutor {
  return {
    all: async (sql: string, params: readonly SqlValue[] = []) => (await target.query(numberedPlaceholders(sql), params)).rows as SqlRow[],
    run: async (sql: string, params: readonly SqlValue[] = []) => (await target.query(numberedPlaceholders(sql), params)).rowCount ?? 0,
  };
}

/** The DDL of the schema for this dialect, each statement idempotent. Also the content of schema.sql. */
export function schemaStatements(t: TableNames): string[] {
  // COLLATE "C": keys compare byte by byte, as list's prefix range needs.
  const name = 'VARCHAR(400) COLLATE "C" NOT NULL';
  const cluster = 'VARCHAR(63) COLLATE "C" NOT NULL';
  return [
    `CREATE TABLE IF NOT EXISTS ${t.state} (\n  id INTEGER NOT NULL PRIMARY KEY,\n  schema_version INTEGER NOT NULL,\n  revision BIGINT NOT NULL,\n  purged_through BIGINT NOT NULL,\n  created_by VARCHAR(100) NOT NULL\n)`,
    `CREATE TABLE IF NOT EXISTS ${t.records} (\n  cluster_name ${cluster},\n  record_key ${name},\n  record_version BIGINT NOT NULL,\n  record_value TEXT NOT NULL,\n  created_revision BIGINT NULL,\n  PRIMARY KEY (cluster_name, record_key)\n)`,
    `CREATE TABLE IF NOT EXISTS ${t.changes} (\n  id BIGINT NOT NULL PRIMARY KEY,\n  cluster_name ${cluster},\n  record_key ${name},\n  record_version BIGINT NOT NULL,\n  record_value TEXT NULL,\n  created_ms BIGINT NOT NULL,\n  created_revision BIGINT NULL\n)`,
    `CREATE INDEX IF NOT EXISTS ${t.changes}_created ON ${t.changes} (created_ms)`,
    // The change feed: every statement that appends changes notifies the channel named after the table.
    `CREATE OR REPLACE FUNCTION ${t.changes}_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify(TG_TABLE_NAME, ''); RETURN NULL; END $$`,
    `CREATE OR REPLACE TRIGGER ${t.changes}_notify AFTER INSERT ON ${t.changes} FOR EACH STATEMENT EXECUTE FUNCTION ${t.changes}_notify()`,
  ];
}
