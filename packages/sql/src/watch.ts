import { type Clock, type Logger, RegistryError, RevisionTooOldError, type Timer } from '@rollcall/core';
import type { WatchEvent, WatchListener } from '@rollcall/core/spi';
import { createdOf, decodeRecord, toInt } from './codec.js';
import type { ChangeSignal } from './change-signal.js';
import type { SqlExecutor, SqlRow } from './dialect.js';
import type { TableNames } from './schema.js';

/** Changes read per query; a full batch is followed by the next query at once. */
export const POLL_BATCH = 500;

/** What the poller needs of its database: the change table and a way to read it. */
export interface ChangeFeed {
  /** The backend name in error messages. */
  readonly backend: string;
  readonly tables: Pick<TableNames, 'changes' | 'records'>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Runs one read outside a transaction; rejects with a RegistryError. */
  read<T>(operation: string, work: (reader: SqlExecutor) => Promise<T>): Promise<T>;
}

interface Watcher {
  cluster: string;
  /** Full key prefix within the cluster. */
  prefix: string;
  /** The last revision this watcher has been given (or started from). */
  position: number;
  listener: WatchListener;
  open: boolean;
}

/**
 * Reads the change table in id order and fans the rows out to every watch of
 * the process: one indexed query per interval (`id > min(position)`), whatever
 * the number of watches, clusters or prefixes. The ids are the revisions and
 * have no gaps (writers serialize on the state row), so a row missing where the
 * next id should be means it was purged: those watches get REVISION_TOO_OLD.
 *
 * With a {@link ChangeSignal} the interval applies only while the signal is
 * down: while it is up, the poller reads when told that a write committed.
 */
export class ChangePoller {
  private readonly watchers = new Set<Watcher>();
  private timer: Timer | undefined;
  private polling = false;
  private again = false;
  private closed = false;
  /** The change signal is up: no timed polls, a read on every signal. */
  private pushed = false;
  private signalStarted = false;
  /** Queries run so far, for tests. */
  queries = 0;

  /** A read runs or is scheduled, for tests: with a change signal up, an idle poller has none. */
  get pending(): boolean {
    return this.polling || this.timer !== undefined;
  }

  constructor(
    private readonly db: ChangeFeed,
    private readonly intervalMs: number,
    private readonly signal?: ChangeSignal,
  ) {}

  /** Watches `cluster`'s keys under `prefix` after `fromRevision`; returns the function that ends it. */
  add(cluster: string, prefix: string, fromRevision: string, listener: WatchListener): () => void {
    const position = /^\d+$/.test(fromRevision) ? Number(fromRevision) : Number.NaN;
    const watcher: Watcher = { cluster, prefix, position, listener, open: true };
    const close = () => {
      watcher.open = false;
      this.watchers.delete(watcher);
    };
    if (!Number.isSafeInteger(position)) {
      queueMicrotask(() => this.end(watcher, new RevisionTooOldError(`revision ${JSON.stringify(fromRevision)} is not one this store issued; relist`, { backend: this.db.backend })));
      return close;
    }
    this.watchers.add(watcher);
    this.startSignal();
    this.wake();
    return close;
  }

  /** Polls as soon as possible (a new watch, or a write of this process that its watches should see now). */
  wake(): void {
    if (this.closed || this.watchers.size === 0) return;
    if (this.polling) {
      this.again = true;
      return;
    }
    this.arm(0);
  }

  /**
   * A write of this process just committed as `change.id`: watches that have
   * seen everything before it get it now, before the write resolves, so every
   * registry of the process sees its own writes at once. Others (behind on
   * another process's writes) get it from the next poll, in order.
   */
  localChange(change: { id: number; cluster: string; key: string; version: number; value: string | null; created?: number }): void {
    if (this.closed) return;
    let behind = false;
    const event = this.toEvent(change.key, change.id, { record_version: change.version, record_value: change.value, created_revision: change.created ?? null });
    for (const watcher of [...this.watchers]) {
      if (watcher.position !== change.id - 1) {
        if (watcher.position < change.id) behind = true;
        continue;
      }
      watcher.position = change.id;
      if (change.cluster === watcher.cluster && change.key.startsWith(watcher.prefix)) this.deliver(watcher, event);
      else this.deliver(watcher, { type: 'progress', revision: String(change.id) });
    }
    if (behind) this.wake();
  }

  /** Ends every watch with `error` (the store is closing, or the database went away). */
  failAll(error: RegistryError): void {
    for (const watcher of [...this.watchers]) this.end(watcher, error);
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.watchers.clear();
  }

  /** Listens from the first watch on: a process that watches nothing holds no listening connection. */
  private startSignal(): void {
    if (!this.signal || this.signalStarted || this.closed) return;
    this.signalStarted = true;
    this.signal.start({
      changed: () => this.wake(),
      // Commits between the last read and the signal coming up were not signalled: read once now.
      up: () => {
        this.pushed = true;
        this.wake();
      },
      down: (err) => {
        if (this.closed) return;
        this.db.logger.debug({ backend: this.db.backend, err }, '[rollcall] change signal down; polling the change table until it is back');
        this.pushed = false;
        this.wake();
      },
    });
  }

  private schedule(delay: number): void {
    if (this.closed || this.watchers.size === 0) return;
    // Signalled: the next read comes from a signal, not a timer.
    if (delay > 0 && this.pushed) {
      this.timer?.cancel();
      this.timer = undefined;
      return;
    }
    this.arm(delay);
  }

  private arm(delay: number): void {
    this.timer?.cancel();
    const timer = this.db.clock.setTimeout(() => {
      if (this.timer === timer) this.timer = undefined;
      void this.poll();
    }, delay);
    this.timer = timer;
  }

  private async poll(): Promise<void> {
    if (this.closed || this.polling || this.watchers.size === 0) return;
    this.polling = true;
    this.again = false;
    // Only the watches present when the query starts get its rows: one added meanwhile may start earlier.
    const participants = [...this.watchers];
    const from = Math.min(...participants.map((w) => w.position));
    const { changes } = this.db.tables;
    let rows: SqlRow[];
    try {
      this.queries++;
      // A plain range scan along the primary key: no temporary table, no sort. (MariaDB 10.11 can
      // crash freeing an internal temporary table of a query in flight at shutdown.)
      // A put of the previous release (no created_revision) over a row this release inserted keeps
      // that row's creation: read it from the row (a primary-key lookup, for those changes only).
      const { records } = this.db.tables;
      const rowCreated = `CASE WHEN c.created_revision IS NULL AND c.record_value IS NOT NULL THEN (SELECT r.created_revision FROM ${records} r WHERE r.cluster_name = c.cluster_name AND r.record_key = c.record_key) END AS row_created`;
      rows = await this.db.read('watch', (r) =>
        r.all(`SELECT c.id, c.cluster_name, c.record_key, c.record_version, c.record_value, c.created_revision, ${rowCreated} FROM ${changes} c WHERE c.id > ? ORDER BY c.id LIMIT ${POLL_BATCH}`, [from]),
      );
    } catch (err) {
      this.polling = false;
      const error = err instanceof RegistryError ? err : new RegistryError('INTERNAL', `watch: ${String(err)}`, { backend: this.db.backend, cause: err });
      this.db.logger.debug({ backend: this.db.backend, err: error }, '[rollcall] change poll failed; ending the watches');
      this.failAll(error);
      return;
    }
    this.polling = false;
    if (this.closed) return;
    const full = this.dispatch(participants, from, rows);
    this.schedule(full || this.again ? 0 : this.intervalMs);
  }

  /** Hands the rows to the participants; returns whether the batch was full. */
  private dispatch(participants: Watcher[], from: number, rows: SqlRow[]): boolean {
    const backend = this.db.backend;
    // Ids have no gaps and the purge always keeps the newest change: no rows means nothing is
    // new, and a first id past from + 1 means the changes between were purged (or deleted by hand).
    const completeFrom = rows.length > 0 ? Math.max(from, toInt(rows[0]!.id) - 1) : from;
    for (const watcher of participants) {
      if (watcher.open && watcher.position < completeFrom) {
        this.end(watcher, new RevisionTooOldError(`revision ${watcher.position} is older than the oldest change kept, ${completeFrom}; relist`, { backend }));
      }
    }
    const live = () => participants.filter((w) => w.open);
    const skipped = new Set<Watcher>();
    for (const row of rows) {
      const revision = toInt(row.id);
      const cluster = String(row.cluster_name);
      const key = String(row.record_key);
      const event = this.toEvent(key, revision, row);
      for (const watcher of live()) {
        if (revision <= watcher.position) continue;
        watcher.position = revision;
        if (cluster !== watcher.cluster || !key.startsWith(watcher.prefix)) {
          skipped.add(watcher);
          continue;
        }
        skipped.delete(watcher);
        this.deliver(watcher, event);
      }
    }
    // A watch whose last rows were all elsewhere learns its new position, so a resume starts there.
    for (const watcher of skipped) if (watcher.open) this.deliver(watcher, { type: 'progress', revision: String(watcher.position) });
    return rows.length >= POLL_BATCH;
  }

  private toEvent(key: string, revision: number, row: SqlRow): WatchEvent {
    const rev = String(revision);
    const value = row.record_value;
    if (value === null || value === undefined) return { type: 'delete', key, revision: rev };
    const version = String(toInt(row.record_version));
    const decoded = decodeRecord(this.db.backend, key, version, value, createdOf(row) ?? this.lifeOf(row, revision));
    return decoded.ok ? { type: 'put', record: decoded.stored, revision: rev } : { type: 'corrupt', entry: decoded.corrupt, revision: rev };
  }

  /**
   * The creation of a change the previous release wrote, from the row it
   * changed: the row's life began at its created_revision and no delete came
   * since, so a change at or after it is of that life. Null (read as
   * `legacy:<acquireTime>`) when the row is a legacy one, gone, or a later life.
   */
  private lifeOf(row: SqlRow, revision: number): string | null {
    const created = createdOf({ created_revision: row.row_created });
    return created !== null && Number(created) <= revision ? created : null;
  }

  private deliver(watcher: Watcher, event: WatchEvent): void {
    if (!watcher.open) return;
    try {
      watcher.listener.event(event);
    } catch (err) {
      this.db.logger.error({ backend: this.db.backend, err }, '[rollcall] a watch listener threw');
    }
  }

  private end(watcher: Watcher, error: RegistryError): void {
    if (!watcher.open) return;
    watcher.open = false;
    this.watchers.delete(watcher);
    try {
      watcher.listener.error(error);
    } catch (err) {
      this.db.logger.error({ backend: this.db.backend, err }, '[rollcall] a watch listener threw');
    }
  }
}
