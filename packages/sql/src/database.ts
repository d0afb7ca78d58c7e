import { type Clock, ErrorCode, type Logger, PermissionError, RegistryError, SchemaMismatchError, silentLogger, systemClock, type Timer } from '@rollcall/core';
import { Backoff } from '@rollcall/core/spi';
import { toInt } from './codec.js';
import type { SqlDialect, SqlExecutor } from './dialect.js';
import type { SqlOptions } from './options.js';
import { SCHEMA_VERSION, tableNames, type TableNames, upgradeStatements } from './schema.js';
import { ChangePoller, type ChangeFeed } from './watch.js';

export interface SqlDatabaseOptions extends SqlOptions {
  dialect: SqlDialect;
  /** Written into the state row when this process creates the schema, e.g. `@rollcall/mysql 0.1.0`. */
  createdBy: string;
  clock?: Clock;
  logger?: Logger;
  /** Bound on retrying a busy or contended statement, milliseconds. */
  requestTimeoutMs: number;
  /** The dialect's connections are read-only: check the schema but never create it, skip the write check and the purge. Default false. */
  readOnly?: boolean;
}

/** The pause before a busy statement is tried again: from 5 ms, doubling to 100 ms, up to half of each taken off at random. */
const BUSY_RETRY = { initialMs: 5, maxMs: 100, jitter: 0.5 };

/**
 * One database as the stores of a process share it: the dialect's connections,
 * the schema check, the change poller and the purge. Stores of every cluster on
 * it use the same poller, so the database sees one query per poll interval
 * however many watches the process has.
 */
export class SqlDatabase implements ChangeFeed {
  readonly dialect: SqlDialect;
  readonly tables: TableNames;
  readonly poller: ChangePoller;
  readonly clock: Clock;
  readonly logger: Logger;
  private purgeTimer: Timer | undefined;
  private purging: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(readonly options: SqlDatabaseOptions) {
    this.dialect = options.dialect;
    this.tables = tableNames(options.tablePrefix);
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.poller = new ChangePoller(this, options.pollIntervalMs, options.dialect.changeSignal);
  }

  get backend(): string {
    return this.dialect.backend;
  }

  /**
   * Checks (and, when allowed, creates) the schema, then that the user may write
   * every table, so a missing privilege fails here and not at the first renew.
   */
  async open(): Promise<void> {
    await this.ensureSchema();
    if (this.options.readOnly) return; // it writes nothing, so it needs no write privilege and purges nothing
    await this.checkWritable();
    this.schedulePurge();
  }

  /** Runs one statement outside a transaction, retrying while busy; native errors become RegistryErrors. */
  async read<T>(operation: string, work: (reader: SqlExecutor) => Promise<T>): Promise<T> {
    return this.retrying(operation, () => work(this.dialect.reader));
  }

  /** Runs a write transaction, retrying while busy; native errors become RegistryErrors. */
  async write<T>(operation: string, work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.retrying(operation, () => this.dialect.transaction(work));
  }

  /**
   * Deletes the changes older than `olderThanMs` (default: the retention), or
   * all of them with `{ all: true }` — always but the newest, which the poller
   * needs to tell "nothing new" from "purged". Watches from a purged revision
   * get REVISION_TOO_OLD and relist. Returns the revision purged through.
   */
  async purgeChanges(options: { all?: boolean; olderThanMs?: number } = {}): Promise<number> {
    const { state, changes } = this.tables;
    const run = this.purging.then(async () => {
      let candidate = Number.MAX_SAFE_INTEGER;
      if (!options.all) {
        const cutoff = this.clock.wallNow().getTime() - (options.olderThanMs ?? this.options.changeRetentionMs);
        const rows = await this.read('purge', (r) => r.all(`SELECT MAX(id) AS through FROM ${changes} WHERE created_ms < ?`, [cutoff]));
        if (rows[0]?.through === null || rows[0]?.through === undefined) return 0;
        candidate = toInt(rows[0].through);
      }
      // Lock the state row first, as writers do: the purge and the writes serialize on it.
      return this.write('purge', async (tx) => {
        await tx.run(`UPDATE ${state} SET purged_through = purged_through WHERE id = 1`);
        const [row] = await tx.all(`SELECT revision, purged_through FROM ${state} WHERE id = 1`);
        const through = Math.min(candidate, toInt(row?.revision) - 1);
        if (!(through > toInt(row?.purged_through))) return toInt(row?.purged_through);
        await tx.run(`UPDATE ${state} SET purged_through = ? WHERE id = 1`, [through]);
        await tx.run(`DELETE FROM ${changes} WHERE id <= ?`, [through]);
        return through;
      });
    });
    this.purging = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.purgeTimer?.cancel();
    this.poller.close();
    await this.purging;
    await this.dialect.close();
  }

  private schedulePurge(): void {
    if (this.closed) return;
    // Jitter, so processes started together do not purge together.
    const delay = this.options.purgeIntervalMs * (0.75 + Math.random() * 0.5);
    this.purgeTimer = this.clock.setTimeout(() => {
      this.purgeChanges().then(
        () => this.schedulePurge(),
        (err: unknown) => {
          this.logger.warn({ backend: this.backend, err }, '[rollcall] purging old changes failed; will retry');
          this.schedulePurge();
        },
      );
    }, delay);
  }

  private async retrying<T>(operation: string, attempt: () => Promise<T>): Promise<T> {
    try {
      return await this.retryingNative(attempt);
    } catch (err) {
      throw err instanceof RegistryError ? err : this.dialect.toRegistryError(err, operation);
    }
  }

  /** Retries while the database is busy, until the request timeout; then rethrows the native error for the caller to classify. */
  private async retryingNative<T>(attempt: () => Promise<T>): Promise<T> {
    const deadline = this.clock.now() + this.options.requestTimeoutMs;
    let backoff: Backoff | undefined;
    for (;;) {
      try {
        return await attempt();
      } catch (err) {
        if (err instanceof RegistryError || !this.dialect.isRetryable(err) || this.closed) throw err;
        const pauseMs = (backoff ??= new Backoff({ clock: this.clock, ...BUSY_RETRY })).next();
        if (this.clock.now() + pauseMs >= deadline) throw err;
        await new Promise<void>((resolve) => this.clock.setTimeout(resolve, pauseMs));
      }
    }
  }

  /** The state row, or undefined when the schema is absent. */
  private async readState(): Promise<{ schemaVersion: number; createdBy: string } | undefined> {
    const { state } = this.tables;
    try {
      const rows = await this.retryingNative(() => this.dialect.reader.all(`SELECT schema_version, created_by FROM ${state} WHERE id = 1`));
      if (!rows[0]) return undefined;
      return { schemaVersion: toInt(rows[0].schema_version), createdBy: String(rows[0].created_by) };
    } catch (err) {
      if (this.dialect.isMissingTable(err)) return undefined;
      if (this.dialect.isMissingColumn(err)) throw this.foreign(state, 'it lacks the columns schema_version or created_by', err);
      throw this.dialect.toRegistryError(err, 'read the schema version');
    }
  }

  private foreign(table: string, why: string, cause?: unknown): SchemaMismatchError {
    return new SchemaMismatchError(
      `table ${table} does not have Rollcall's layout version ${SCHEMA_VERSION}: ${why}. Use another tablePrefix, or drop the ${this.tables.prefix}* tables if they are Rollcall's and unused`,
      { backend: this.backend, cause },
    );
  }

  private async ensureSchema(): Promise<void> {
    let found = await this.readState();
    if (!found) {
      if (this.options.readOnly) {
        throw new RegistryError(ErrorCode.NOT_FOUND, `no Rollcall registry to read: table ${this.tables.state} is missing or empty (opened read-only, nothing was created); check the database and registry.${this.backend}.tablePrefix`, { backend: this.backend });
      }
      if (!this.options.createSchema) {
        throw new SchemaMismatchError(
          `no Rollcall schema under the prefix ${this.tables.prefix} (table ${this.tables.state} is missing or empty), and createSchema is false: apply schema.sql first`,
          { backend: this.backend },
        );
      }
      await this.createSchema();
      found = await this.readState();
      if (!found) throw new SchemaMismatchError(`created the schema under ${this.tables.prefix}, but ${this.tables.state} has no row`, { backend: this.backend });
    }
    if (found.schemaVersion !== SCHEMA_VERSION) {
      throw new SchemaMismatchError(
        `the tables under the prefix ${this.tables.prefix} hold schema version ${found.schemaVersion} (written by ${found.createdBy}); this is ${this.options.createdBy}, which uses version ${SCHEMA_VERSION}. Use the matching Rollcall version, or another tablePrefix`,
        { backend: this.backend },
      );
    }
    const { records, changes } = this.tables;
    const probes: [string, string][] = [
      [records, `SELECT cluster_name, record_key, record_version, record_value FROM ${records} WHERE 1 = 0`],
      [changes, `SELECT id, cluster_name, record_key, record_version, record_value, created_ms FROM ${changes} WHERE 1 = 0`],
    ];
    for (const [table, sql] of probes) {
      try {
        await this.retryingNative(() => this.dialect.reader.all(sql));
      } catch (err) {
        if (this.dialect.isMissingTable(err)) throw this.foreign(table, 'the table is missing', err);
        if (this.dialect.isMissingColumn(err)) throw this.foreign(table, 'a column is missing', err);
        throw this.dialect.toRegistryError(err, `check table ${table}`);
      }
    }
    await this.ensureCreatedRevision();
  }

  /** Whether both tables have created_revision (added to layout version 1 later; see `upgradeStatements`). */
  private async hasCreatedRevision(): Promise<boolean> {
    const { records, changes } = this.tables;
    try {
      await this.retryingNative(() => this.dialect.reader.all(`SELECT created_revision FROM ${records} WHERE 1 = 0`));
      await this.retryingNative(() => this.dialect.reader.all(`SELECT created_revision FROM ${changes} WHERE 1 = 0`));
      return true;
    } catch (err) {
      if (this.dialect.isMissingColumn(err)) return false;
      throw this.dialect.toRegistryError(err, 'check the column created_revision');
    }
  }

  /**
   * Tables created by an earlier release lack created_revision: add it when this
   * process may run DDL, else refuse naming the statements. Rows already there
   * keep NULL and read as `legacy:<acquireTime>` (`legacyCreated`).
   */
  private async ensureCreatedRevision(): Promise<void> {
    if (await this.hasCreatedRevision()) return;
    const statements = upgradeStatements(this.tables);
    if (this.options.readOnly || !this.options.createSchema) {
      throw new SchemaMismatchError(
        `the tables under the prefix ${this.tables.prefix} were created by an earlier release and lack the column created_revision, and this process may not add it (${this.options.readOnly ? 'opened read-only' : 'createSchema is false'}): apply ${statements.map((s) => `\`${s}\``).join(' and ')} as a user allowed to alter them (schema.sql lists them too)`,
        { backend: this.backend },
      );
    }
    this.logger.info({ backend: this.backend, prefix: this.tables.prefix }, '[rollcall] adding the column created_revision');
    for (const [i, sql] of statements.entries()) {
      try {
        await this.retryingNative(() => this.dialect.reader.run(sql));
      } catch (err) {
        // Another process may have added it first (a duplicate column): what counts is that it is there now.
        if (i === 0 ? await this.columnIn(this.tables.records) : await this.columnIn(this.tables.changes)) continue;
        if (this.dialect.isPermissionDenied(err)) {
          throw new PermissionError('PERMISSION_DENIED', `the tables under the prefix ${this.tables.prefix} lack the column created_revision and this user may not add it (ALTER denied): apply ${statements.map((s) => `\`${s}\``).join(' and ')} as a user who may`, { backend: this.backend, cause: err });
        }
        throw this.dialect.toRegistryError(err, 'add the column created_revision');
      }
    }
  }

  private async columnIn(table: string): Promise<boolean> {
    try {
      await this.retryingNative(() => this.dialect.reader.all(`SELECT created_revision FROM ${table} WHERE 1 = 0`));
      return true;
    } catch {
      return false;
    }
  }

  private async createSchema(): Promise<void> {
    const { state, changes } = this.tables;
    this.logger.info({ backend: this.backend, prefix: this.tables.prefix }, '[rollcall] creating the schema');
    try {
      await this.retryingNative(() => this.dialect.createSchema(this.dialect.schemaStatements(this.tables), async (tx) => {
        const existing = await tx.all(`SELECT id FROM ${state} WHERE id = 1`);
        if (existing.length > 0) return; // another process finished first
        // Changes left by an interrupted creation keep their ids: the counter starts above them.
        const rows = await tx.all(`SELECT COALESCE(MAX(id), 0) AS top FROM ${changes}`);
        const top = toInt(rows[0]?.top ?? 0);
        await tx.run(`INSERT INTO ${state} (id, schema_version, revision, purged_through, created_by) VALUES (1, ?, ?, ?, ?)`, [
          SCHEMA_VERSION,
          top,
          top,
          this.options.createdBy,
        ]);
      }));
    } catch (err) {
      if (this.dialect.isDuplicateKey(err)) return; // a concurrent creator inserted the state row
      if (this.dialect.isPermissionDenied(err)) {
        throw new PermissionError(
          'PERMISSION_DENIED',
          `the schema under the prefix ${this.tables.prefix} is missing and this user may not create tables (CREATE denied): apply the package's schema.sql as a user who may, then connect again`,
          { backend: this.backend, cause: err },
        );
      }
      throw err instanceof RegistryError ? err : this.dialect.toRegistryError(err, 'create the schema');
    }
  }

  /** Statements that change nothing but need each write privilege: a read-only user fails here, at connect. */
  private async checkWritable(): Promise<void> {
    const { state, records, changes } = this.tables;
    const recordCols = 'cluster_name, record_key, record_version, record_value';
    const changeCols = 'id, cluster_name, record_key, record_version, record_value, created_ms';
    const checks: [string, string, string][] = [
      ['UPDATE', state, `UPDATE ${state} SET revision = revision WHERE 1 = 0`],
      ['INSERT', records, `INSERT INTO ${records} (${recordCols}) SELECT ${recordCols} FROM ${records} WHERE 1 = 0`],
      ['UPDATE', records, `UPDATE ${records} SET record_version = record_version WHERE 1 = 0`],
      ['DELETE', records, `DELETE FROM ${records} WHERE 1 = 0`],
      ['INSERT', changes, `INSERT INTO ${changes} (${changeCols}) SELECT ${changeCols} FROM ${changes} WHERE 1 = 0`],
      ['DELETE', changes, `DELETE FROM ${changes} WHERE 1 = 0`],
    ];
    for (const [privilege, table, sql] of checks) {
      try {
        await this.retryingNative(() => this.dialect.reader.run(sql));
      } catch (err) {
        if (this.dialect.isPermissionDenied(err)) {
          throw new PermissionError(
            'PERMISSION_DENIED',
            `this user may not ${privilege} on ${table}; Rollcall needs SELECT, INSERT, UPDATE and DELETE on ${state}, ${records} and ${changes}`,
            { backend: this.backend, cause: err },
          );
        }
        throw this.dialect.toRegistryError(err, `check ${privilege} on ${table}`);
      }
    }
  }
}
