import { RevisionTooOldError, StoreConflictError, UnavailableError } from '../errors.js';
import type { LeaseRecord } from '../lease-record.js';
import { assertPayloadSize } from '../payload.js';
import type { RecordKey, RecordList, RecordStore, StoredRecord, StoreSupports, WatchListener, WatchSubscription } from '../store.js';
import type { MemoryBackend, MemoryRow } from './memory-backend.js';

const BACKEND = 'memory';

export interface MemoryStoreOptions {
  /** The backend to attach to; several stores on one backend share its records. */
  backend: MemoryBackend;
  /** The cluster whose records this store sees. */
  cluster: string;
  /** Largest payload accepted, bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
}

/**
 * A RecordStore over a MemoryBackend. Results settle as microtasks, never on a
 * timer, so tests on a manual clock can drive it. `partition()` and `heal()`
 * cut this one client off and back, and `refusing` fails its calls while its
 * watches go on, for fault tests.
 */
export class MemoryStore implements RecordStore {
  readonly spiVersion = 1 as const;
  readonly backend = BACKEND;
  readonly maxPayloadBytes: number;
  /** A watch's progress is marked synced once caught up, and `created` (the create's revision) is ordered; no optional member. */
  readonly supports: StoreSupports = { syncedProgress: true, orderedCreation: true };
  private readonly prefix: string;
  /**
   * While true, every call fails with UNAVAILABLE and open watches stay up and
   * deliver: a connection whose requests time out while its stream lives.
   * Default false.
   */
  refusing = false;
  private partitioned = false;
  private closed = false;
  private readonly watches = new Set<{ fail: (error: UnavailableError) => void }>();

  constructor(private readonly options: MemoryStoreOptions) {
    this.prefix = `${options.cluster}/`;
    this.maxPayloadBytes = options.maxPayloadBytes ?? 1024 * 1024;
  }

  /** The backend this store is attached to. */
  get memoryBackend(): MemoryBackend {
    return this.options.backend;
  }

  /** Cuts this client off: calls fail with UNAVAILABLE and open watches end. */
  partition(): void {
    this.partitioned = true;
    for (const watch of [...this.watches]) watch.fail(new UnavailableError('partitioned', { backend: BACKEND }));
  }

  /** Reconnects this client. */
  heal(): void {
    this.partitioned = false;
  }

  async get(key: RecordKey): Promise<StoredRecord | undefined> {
    this.reachable();
    const row = this.options.backend.rows.get(this.prefix + key);
    return row && this.toStored(row);
  }

  async create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord> {
    this.reachable();
    assertPayloadSize(record.payload, this.maxPayloadBytes, BACKEND);
    const path = this.prefix + key;
    if (this.options.backend.rows.has(path)) throw new StoreConflictError('ALREADY_EXISTS', `${key} already exists`, { backend: BACKEND });
    return this.toStored(this.options.backend.commit(path, record)!);
  }

  async update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord> {
    this.reachable();
    assertPayloadSize(record.payload, this.maxPayloadBytes, BACKEND);
    const path = this.prefix + key;
    this.expectVersion(key, path, version);
    return this.toStored(this.options.backend.commit(path, record)!);
  }

  async delete(key: RecordKey, version: string): Promise<void> {
    this.reachable();
    const path = this.prefix + key;
    this.expectVersion(key, path, version);
    this.options.backend.commit(path, undefined);
  }

  async list(prefix: string): Promise<RecordList> {
    this.reachable();
    const records: StoredRecord[] = [];
    for (const row of this.options.backend.rows.values()) {
      if (row.path.startsWith(this.prefix + prefix)) records.push(this.toStored(row));
    }
    return { records, corrupt: [], revision: String(this.options.backend.revision) };
  }

  watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    const full = this.prefix + prefix;
    let open = true;
    let queue = Promise.resolve();
    const deliver = (fn: () => void) => (queue = queue.then(() => (open ? fn() : undefined)));
    const end = (error: RevisionTooOldError | UnavailableError) => {
      deliver(() => listener.error(error));
      deliver(() => close());
    };
    const watch = { fail: end };
    let unsubscribe = () => {};
    const close = () => {
      open = false;
      unsubscribe();
      this.watches.delete(watch);
    };
    if (this.partitioned || this.closed) {
      end(new UnavailableError('partitioned', { backend: BACKEND }));
      return { close };
    }
    const from = Number(fromRevision);
    const backlog = Number.isInteger(from) ? this.options.backend.changesAfter(from) : undefined;
    if (!backlog) {
      end(new RevisionTooOldError(`revision ${fromRevision} is older than the oldest kept, ${this.options.backend.oldestRevision}`, { backend: BACKEND }));
      return { close };
    }
    const forward = (change: { revision: number; path: string; row: MemoryRow | undefined }) => {
      if (!change.path.startsWith(full)) return;
      const key = change.path.slice(this.prefix.length);
      const revision = String(change.revision);
      const row = change.row && structuredClone(change.row);
      deliver(() => listener.event(row ? { type: 'put', record: this.toStored(row), revision } : { type: 'delete', key, revision }));
    };
    this.watches.add(watch);
    deliver(() => listener.event({ type: 'progress', revision: String(from) }));
    backlog.forEach(forward);
    // The backlog was in hand: no REVISION_TOO_OLD can follow, and everything up to now is on its way before this.
    const now = String(this.options.backend.revision);
    deliver(() => listener.event({ type: 'progress', revision: now, synced: true }));
    unsubscribe = this.options.backend.subscribe(forward);
    return { close };
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const watch of [...this.watches]) watch.fail(new UnavailableError('store closed', { backend: BACKEND }));
  }

  private reachable(): void {
    if (this.closed) throw new UnavailableError('store closed', { backend: BACKEND });
    if (this.partitioned) throw new UnavailableError('partitioned', { backend: BACKEND });
    if (this.refusing) throw new UnavailableError('requests time out', { backend: BACKEND });
  }

  private expectVersion(key: RecordKey, path: string, version: string): void {
    const row = this.options.backend.rows.get(path);
    if (!row) throw new StoreConflictError('NOT_FOUND', `${key} does not exist`, { backend: BACKEND });
    if (String(row.modRevision) !== version) throw new StoreConflictError('CONFLICT', `${key} is at version ${row.modRevision}, not ${version}`, { backend: BACKEND });
  }

  private toStored(row: MemoryRow): StoredRecord {
    // The revision of the last write, unique across deletes and re-creates, so a stale version never matches again.
    return { key: row.path.slice(this.prefix.length), version: String(row.modRevision), record: structuredClone(row.record), created: String(row.createRevision) };
  }
}
