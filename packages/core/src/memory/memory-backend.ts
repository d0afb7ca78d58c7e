import type { LeaseRecord } from '../lease-record.js';

/** One stored value in the memory backend. */
export interface MemoryRow {
  /** `<cluster>/<key>`. */
  path: string;
  record: LeaseRecord;
  /** Per-row version, bumped on every write. */
  version: number;
  /** The backend revision of the last write. */
  modRevision: number;
  /** The backend revision of the create that began this row's life; kept by updates. */
  createRevision: number;
}

/** One change in the backend's history. */
export interface MemoryChange {
  revision: number;
  path: string;
  /** The row after the change; undefined for a delete. */
  row: MemoryRow | undefined;
}

export interface MemoryBackendOptions {
  /** Changes kept for watches to resume from; older revisions get REVISION_TOO_OLD. Default 10000. */
  historyLimit?: number;
}

/**
 * The in-process "server" behind `registry.type=memory`: rows, a global
 * revision and a bounded change history, shared by every MemoryStore attached
 * to it. Clusters are path prefixes, so two clusters never see each other.
 */
export class MemoryBackend {
  readonly rows = new Map<string, MemoryRow>();
  private history: MemoryChange[] = [];
  private revisionCounter = 0;
  private compactedThrough = 0;
  private readonly historyLimit: number;
  private readonly subscribers = new Set<(change: MemoryChange) => void>();

  constructor(options: MemoryBackendOptions = {}) {
    this.historyLimit = options.historyLimit ?? 10_000;
  }

  get revision(): number {
    return this.revisionCounter;
  }

  /** The oldest revision a watch can still start from. */
  get oldestRevision(): number {
    return this.compactedThrough;
  }

  /** Applies a write and tells the watchers. */
  commit(path: string, record: LeaseRecord | undefined): MemoryRow | undefined {
    const revision = ++this.revisionCounter;
    let row: MemoryRow | undefined;
    if (record) {
      const previous = this.rows.get(path);
      row = { path, record: structuredClone(record), version: (previous?.version ?? 0) + 1, modRevision: revision, createRevision: previous?.createRevision ?? revision };
      this.rows.set(path, row);
    } else {
      this.rows.delete(path);
    }
    const change = { revision, path, row };
    this.history.push(change);
    if (this.history.length > this.historyLimit) this.compact(this.history[this.history.length - this.historyLimit - 1]!.revision);
    for (const subscriber of [...this.subscribers]) subscriber(change);
    return row;
  }

  /** Changes after `revision`; undefined when history no longer reaches back that far. */
  changesAfter(revision: number): MemoryChange[] | undefined {
    if (revision < this.compactedThrough) return undefined;
    return this.history.filter((c) => c.revision > revision);
  }

  /** Drops history up to and including `revision` (default: all of it), as etcd's compaction does. */
  compact(revision = this.revisionCounter): void {
    this.compactedThrough = Math.max(this.compactedThrough, revision);
    this.history = this.history.filter((c) => c.revision > this.compactedThrough);
  }

  subscribe(subscriber: (change: MemoryChange) => void): () => void {
    this.subscribers.add(subscriber);
    return () => this.subscribers.delete(subscriber);
  }
}

const shared = new Map<string, MemoryBackend>();

/** The process-wide backend named `name`: registries that name the same one share records. */
export function sharedMemoryBackend(name: string): MemoryBackend {
  let backend = shared.get(name);
  if (!backend) shared.set(name, (backend = new MemoryBackend()));
  return backend;
}
