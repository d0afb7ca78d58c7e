import { InvalidArgumentError, StoreConflictError, UnavailableError } from '@rollcall/core';
import { assertPayloadSize, type LeaseRecord, type RecordKey, type RecordList, recordShapeProblem, type RecordStore, type StoredRecord, type StoreSupports, type WatchListener, type WatchSubscription } from '@rollcall/core/spi';
import { createdOf, decodeRecord, encodeRecord, legacyCreated, toInt } from './codec.js';
import type { SqlDatabase } from './database.js';
import type { SqlExecutor } from './dialect.js';
import { MAX_CLUSTER_LENGTH, MAX_KEY_LENGTH } from './schema.js';

/** Largest payload a SQL store keeps, bytes of UTF-8 JSON. */
export const SQL_MAX_PAYLOAD_BYTES = 1024 * 1024;

const KEY_PATTERN = /^[\x21-\x7e]+$/;

/** The first string after every string that starts with `prefix`, in binary order. */
function prefixEnd(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

/**
 * The record store over a SQL database, for one cluster. A write is one
 * transaction: take the next revision (locking the state row), compare-and-set
 * the record on its version, and append the change whose id is that revision.
 * A record's version is the revision of its last write, so it never repeats,
 * not even across a delete and a re-create.
 */
export class SqlRecordStore implements RecordStore {
  readonly spiVersion = 1 as const;
  readonly maxPayloadBytes = SQL_MAX_PAYLOAD_BYTES;
  /**
   * No optional member; `created` is the revision of the row's insert, so creates are ordered
   * (but for rows an earlier release wrote, `legacy:<acquireTime>`: see `legacyCreated`).
   */
  readonly supports: StoreSupports = { orderedCreation: true };
  private closed = false;
  private readonly watches = new Set<() => void>();

  constructor(
    readonly database: SqlDatabase,
    readonly cluster: string,
    private readonly release: () => Promise<void> = () => database.close(),
  ) {
    if (cluster.length === 0 || cluster.length > MAX_CLUSTER_LENGTH || !KEY_PATTERN.test(cluster)) {
      throw new InvalidArgumentError(`cluster ${JSON.stringify(cluster)} must be 1-${MAX_CLUSTER_LENGTH} printable ASCII characters`, { backend: database.backend });
    }
  }

  get backend(): string {
    return this.database.backend;
  }

  async get(key: RecordKey): Promise<StoredRecord | undefined> {
    this.usable(key);
    const { records } = this.database.tables;
    const rows = await this.database.read('get', (r) =>
      r.all(`SELECT record_version, record_value, created_revision FROM ${records} WHERE cluster_name = ? AND record_key = ?`, [this.cluster, key]),
    );
    const row = rows[0];
    if (!row) return undefined;
    const decoded = decodeRecord(this.backend, key, String(toInt(row.record_version)), row.record_value, createdOf(row));
    if (!decoded.ok) throw decoded.corrupt.error;
    return decoded.stored;
  }

  async create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord> {
    this.usable(key);
    const value = this.encode(record);
    const { records } = this.database.tables;
    const stored = await this.database.write('create', async (tx) => {
      const revision = await this.database.dialect.nextRevision(tx, this.database.tables);
      try {
        await tx.run(`INSERT INTO ${records} (cluster_name, record_key, record_version, record_value, created_revision) VALUES (?, ?, ?, ?, ?)`, [this.cluster, key, revision, value, revision]);
      } catch (err) {
        if (this.database.dialect.isDuplicateKey(err)) throw new StoreConflictError('ALREADY_EXISTS', `${key} already exists`, { backend: this.backend, cause: err });
        throw err;
      }
      await this.appendChange(tx, revision, key, value, revision);
      return this.result(key, revision, record, revision);
    });
    this.database.poller.localChange({ id: Number(stored.version), cluster: this.cluster, key, version: Number(stored.version), value, created: Number(stored.created) });
    return stored;
  }

  async update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord> {
    this.usable(key);
    const value = this.encode(record);
    const expected = this.parseVersion(version);
    const { records } = this.database.tables;
    const stored = await this.database.write('update', async (tx) => {
      const revision = await this.database.dialect.nextRevision(tx, this.database.tables);
      // A row an older release inserted keeps created_revision NULL: pinning it would change its creation once more.
      const sql = `UPDATE ${records} SET record_version = ?, record_value = ? WHERE cluster_name = ? AND record_key = ? AND record_version = ?`;
      const params = [revision, value, this.cluster, key, expected];
      let created: string | null;
      if (this.database.dialect.updateReturning) {
        const rows = await tx.all(`${sql} RETURNING created_revision`, params);
        if (rows.length !== 1) await this.refuse(tx, key, version);
        created = createdOf(rows[0]!);
      } else {
        if ((await tx.run(sql, params)) !== 1) await this.refuse(tx, key, version);
        // Our own write, read back inside the transaction (the row is locked): the creation this update keeps.
        const [row] = await tx.all(`SELECT created_revision FROM ${records} WHERE cluster_name = ? AND record_key = ?`, [this.cluster, key]);
        created = createdOf(row ?? {});
      }
      await this.appendChange(tx, revision, key, value, created === null ? null : Number(created));
      return this.result(key, revision, record, created ?? legacyCreated(record, String(revision)));
    });
    // A legacy row's change carries no created_revision, as its change row does not: watchers read `legacy:` alike.
    const created = /^\d+$/.test(stored.created) ? Number(stored.created) : undefined;
    this.database.poller.localChange({ id: Number(stored.version), cluster: this.cluster, key, version: Number(stored.version), value, ...(created === undefined ? {} : { created }) });
    return stored;
  }

  async delete(key: RecordKey, version: string): Promise<void> {
    this.usable(key);
    const expected = this.parseVersion(version);
    const { records } = this.database.tables;
    const revision = await this.database.write('delete', async (tx) => {
      const revision = await this.database.dialect.nextRevision(tx, this.database.tables);
      const changed = await tx.run(`DELETE FROM ${records} WHERE cluster_name = ? AND record_key = ? AND record_version = ?`, [this.cluster, key, expected]);
      if (changed !== 1) await this.refuse(tx, key, version);
      await this.appendChange(tx, revision, key, null);
      return revision;
    });
    this.database.poller.localChange({ id: revision, cluster: this.cluster, key, version: revision, value: null });
  }

  async list(prefix: string): Promise<RecordList> {
    this.usable();
    if (prefix !== '' && !KEY_PATTERN.test(prefix)) throw new InvalidArgumentError(`prefix ${JSON.stringify(prefix)} must be printable ASCII`, { backend: this.backend });
    const { state, records } = this.database.tables;
    const range = prefix === '' ? '' : ' AND r.record_key >= ? AND r.record_key < ?';
    const params = prefix === '' ? [this.cluster] : [this.cluster, prefix, prefixEnd(prefix)];
    // One statement: the revision and the rows come from one snapshot, in every isolation level.
    const rows = await this.database.read('list', (r) =>
      r.all(
        `SELECT s.revision, r.record_key, r.record_version, r.record_value, r.created_revision FROM ${state} s LEFT JOIN ${records} r ON r.cluster_name = ?${range} WHERE s.id = 1`,
        params,
      ),
    );
    if (rows.length === 0) throw new UnavailableError(`the state row of ${state} is missing`, { backend: this.backend });
    const result: RecordList = { records: [], corrupt: [], revision: String(toInt(rows[0]!.revision)) };
    for (const row of rows) {
      if (row.record_key === null || row.record_key === undefined) continue;
      const decoded = decodeRecord(this.backend, String(row.record_key), String(toInt(row.record_version)), row.record_value, createdOf(row));
      if (decoded.ok) result.records.push(decoded.stored);
      else result.corrupt.push(decoded.corrupt);
    }
    // Sorted here rather than by the query, which then needs no temporary table.
    result.records.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    result.corrupt.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return result;
  }

  watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    if (this.closed) {
      queueMicrotask(() => listener.error(new UnavailableError('store closed', { backend: this.backend })));
      return { close: () => undefined };
    }
    let remove: () => void = () => undefined;
    const close = () => {
      remove();
      this.watches.delete(close);
    };
    remove = this.database.poller.add(this.cluster, prefix, fromRevision, {
      event: (event) => listener.event(event),
      error: (error) => {
        this.watches.delete(close);
        listener.error(error);
      },
    });
    this.watches.add(close);
    return { close };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const close of [...this.watches]) close();
    await this.release();
  }

  private usable(key?: RecordKey): void {
    if (this.closed) throw new UnavailableError('store closed', { backend: this.backend });
    if (key !== undefined && (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH || !KEY_PATTERN.test(key))) {
      throw new InvalidArgumentError(`key ${JSON.stringify(key)} must be 1-${MAX_KEY_LENGTH} printable ASCII characters`, { backend: this.backend });
    }
  }

  private encode(record: LeaseRecord): string {
    const problem = recordShapeProblem(record);
    if (problem) throw new InvalidArgumentError(`the record is not valid: ${problem}`, { backend: this.backend });
    assertPayloadSize(record.payload, this.maxPayloadBytes, this.backend);
    return encodeRecord(record);
  }

  /** A version this store never issued matches no row: the CAS then fails CONFLICT or NOT_FOUND. */
  private parseVersion(version: string): number {
    return typeof version === 'string' && /^\d{1,15}$/.test(version) ? Number(version) : -1;
  }

  /** The compare-and-set matched nothing: say whether the record is gone or changed. Rolls the transaction back. */
  private async refuse(tx: SqlExecutor, key: RecordKey, version: string): Promise<never> {
    const { records } = this.database.tables;
    const rows = await tx.all(`SELECT record_version FROM ${records} WHERE cluster_name = ? AND record_key = ?`, [this.cluster, key]);
    if (rows.length === 0) throw new StoreConflictError('NOT_FOUND', `${key} does not exist`, { backend: this.backend });
    throw new StoreConflictError('CONFLICT', `${key} is at version ${toInt(rows[0]!.record_version)}, not ${version}`, { backend: this.backend });
  }

  private async appendChange(tx: SqlExecutor, revision: number, key: RecordKey, value: string | null, created: number | null = null): Promise<void> {
    const { changes } = this.database.tables;
    await tx.run(`INSERT INTO ${changes} (id, cluster_name, record_key, record_version, record_value, created_ms, created_revision) VALUES (?, ?, ?, ?, ?, ?, ?)`, [
      revision,
      this.cluster,
      key,
      revision,
      value,
      this.database.clock.wallNow().getTime(),
      created,
    ]);
  }

  private result(key: RecordKey, revision: number, record: LeaseRecord, created: number | string): StoredRecord {
    return { key, version: String(revision), record: structuredClone(record), created: String(created) };
  }
}
