import type { SqlDialect, SqlExecutor, SqlRow, SqlValue, TableNames } from '@rollcall/sql';
import { createPool, type MysqlPoolConfig, type Pool, type Queryable, type ResultHeader } from './client.js';
import { BACKEND, isDuplicateKey, isMissingColumn, isMissingTable, isPermissionDenied, isRetryable, toRegistryError } from './errors.js';

/** Calls that may wait for one of the pool's connections; one more fails UNAVAILABLE at once. */
export const MAX_QUEUED_REQUESTS = 1000;

/**
 * MySQL 8 and MariaDB through a mysql2 pool. Every call borrows a connection
 * for one statement or one transaction and gives it back clean: nothing that
 * belongs to a session (GET_LOCK, user variables, held locks) outlives the call.
 */
export class MysqlDialect implements SqlDialect {
  readonly backend = BACKEND;
  readonly reader: SqlExecutor;
  private readonly pool: Pool;
  private readonly database: string;
  private closed = false;

  constructor(
    config: MysqlPoolConfig,
    private readonly where: string,
    private readonly requestTimeoutMs: number,
  ) {
    this.database = config.database;
    this.pool = createPool({
      ...config,
      waitForConnections: true,
      // Bounded: past it a call fails UNAVAILABLE at once instead of queueing without end (each waits its request timeout at most).
      queueLimit: MAX_QUEUED_REQUESTS,
      enableKeepAlive: true,
      idleTimeout: 60_000,
      charset: 'utf8mb4',
      supportBigNumbers: true,
      multipleStatements: false,
    });
    // An idle connection the server dropped surfaces here; the pool replaces it.
    (this.pool as unknown as { on(event: string, fn: (err: unknown) => void): void }).on?.('error', () => undefined);
    // Every write takes the state row's lock first. A client paused or cut off in the middle of
    // one would hold it, and block every other writer, until the server noticed its connection
    // gone (wait_timeout: hours); the server ends such a transaction after this many idle seconds.
    // Queued before the pool hands the connection out. MySQL lacks the variable (error 1193): its
    // transactions stay unbounded, as its README says.
    const idleSeconds = Math.max(1, Math.ceil(requestTimeoutMs / 1000));
    this.pool.on('connection', (connection) => connection.query(`SET SESSION idle_transaction_timeout = ${idleSeconds}`, () => undefined));
    this.reader = this.executor(this.pool);
  }

  async transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    const connection = await this.pool.getConnection();
    const control = (sql: string) => connection.query({ sql, timeout: this.requestTimeoutMs });
    let healthy = true;
    try {
      await control('START TRANSACTION');
      try {
        const result = await work(this.executor(connection));
        await control('COMMIT');
        return result;
      } catch (err) {
        await control('ROLLBACK').catch(() => {
          healthy = false;
        });
        throw err;
      }
    } catch (err) {
      if ((err as { fatal?: boolean })?.fatal) healthy = false;
      throw err;
    } finally {
      // A connection whose transaction state is unknown never goes back to the pool.
      if (healthy) connection.release();
      else connection.destroy();
    }
  }

  async nextRevision(tx: SqlExecutor, tables: TableNames): Promise<number> {
    // LAST_INSERT_ID(expr) hands the new value back in this statement's own OK packet (MySQL's sequence idiom); no second query.
    const header = await (tx as MysqlExecutor).header(`UPDATE ${tables.state} SET revision = LAST_INSERT_ID(revision + 1) WHERE id = 1`);
    if (header.affectedRows !== 1) throw new Error(`the state row of ${tables.state} is missing`);
    return Number(header.insertId);
  }

  schemaStatements(tables: TableNames): string[] {
    return schemaStatements(tables);
  }

  async createSchema(statements: readonly string[], seed: (tx: SqlExecutor) => Promise<void>): Promise<void> {
    // DDL commits implicitly in MySQL: tables first, then the state row that marks the schema complete.
    for (const sql of statements) {
      await this.pool.query({ sql, timeout: this.requestTimeoutMs });
    }
    await this.transaction(seed);
  }

  isDuplicateKey = isDuplicateKey;
  isMissingTable = isMissingTable;
  isMissingColumn = isMissingColumn;
  isPermissionDenied = isPermissionDenied;
  isRetryable = isRetryable;

  toRegistryError(error: unknown, operation: string) {
    return toRegistryError(error, operation, this.where, this.database);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end().catch(() => undefined);
  }

  private executor(target: Queryable): MysqlExecutor {
    const timeout = this.requestTimeoutMs;
    const execute = (sql: string, params: readonly SqlValue[]) => target.execute({ sql, timeout }, params);
    return {
      all: async (sql, params = []) => {
        const [rows] = await execute(sql, params);
        return rows as SqlRow[];
      },
      run: async (sql, params = []) => {
        const [header] = await execute(sql, params);
        return (header as ResultHeader).affectedRows;
      },
      header: async (sql, params = []) => {
        const [header] = await execute(sql, params);
        return header as ResultHeader;
      },
    };
  }
}

interface MysqlExecutor extends SqlExecutor {
  header(sql: string, params?: readonly SqlValue[]): Promise<ResultHeader>;
}

/** The DDL of the schema for this dialect, each statement idempotent. Also the content of schema.sql. */
export function schemaStatements(t: TableNames): string[] {
  const name = 'VARCHAR(400) CHARACTER SET ascii COLLATE ascii_bin NOT NULL';
  const cluster = 'VARCHAR(63) CHARACTER SET ascii COLLATE ascii_bin NOT NULL';
  const json = 'MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin';
  return [
    `CREATE TABLE IF NOT EXISTS ${t.state} (\n  id INT NOT NULL PRIMARY KEY,\n  schema_version INT NOT NULL,\n  revision BIGINT NOT NULL,\n  purged_through BIGINT NOT NULL,\n  created_by VARCHAR(100) NOT NULL\n) ENGINE=InnoDB`,
    `CREATE TABLE IF NOT EXISTS ${t.records} (\n  cluster_name ${cluster},\n  record_key ${name},\n  record_version BIGINT NOT NULL,\n  record_value ${json} NOT NULL,\n  created_revision BIGINT NULL,\n  PRIMARY KEY (cluster_name, record_key)\n) ENGINE=InnoDB`,
    `CREATE TABLE IF NOT EXISTS ${t.changes} (\n  id BIGINT NOT NULL PRIMARY KEY,\n  cluster_name ${cluster},\n  record_key ${name},\n  record_version BIGINT NOT NULL,\n  record_value ${json} NULL,\n  created_ms BIGINT NOT NULL,\n  created_revision BIGINT NULL,\n  KEY ${t.changes}_created (created_ms)\n) ENGINE=InnoDB`,
  ];
}
