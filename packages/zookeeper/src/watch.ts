import type { Logger, RegistryError } from '@rollcall/core';
import type { CorruptEntry, RecordKey, StoredRecord, WatchEvent, WatchListener, WatchSubscription } from '@rollcall/core/spi';
import type { JournalPosition, RevisionJournal } from './revisions.js';

/** One znode as read: a record, a corrupt value (both with their version and mzxid), or gone. */
export type NodeRead =
  | { kind: 'record'; stored: StoredRecord; mzxid: bigint }
  | { kind: 'corrupt'; entry: CorruptEntry; mzxid: bigint }
  | { kind: 'missing'; key: RecordKey };

/** What a watch needs of its store. */
export interface WatchHost {
  readonly journal: RevisionJournal;
  readonly logger: Logger;
  /** The record keys now in the cluster, and the cluster znode's pzxid; arms the store's child watch. */
  children(): Promise<{ keys: RecordKey[]; pzxid: bigint }>;
  /** Reads one record and arms the store's data watch on it. */
  read(key: RecordKey): Promise<NodeRead>;
  /** Removes the watch from the store's dispatch. */
  detach(watch: PrefixWatch): void;
}

/** A read (or, `read` undefined, a name missing from a list), with the order its request was sent in (see {@link PrefixWatch}). */
type Change = { key: RecordKey; read: NodeRead | undefined; sent: number };

/**
 * A prefix watch built from ZooKeeper's one-shot child and data watches.
 * Each notification starts its reads at once (re-arming the watch) and joins
 * a queue; results are applied in notification order, which is the
 * ensemble's order, against what this watch has already told its listener,
 * so it emits exactly the puts and deletes that differ, never twice. A
 * list's reads of new names are sent after the list returns, so their answers
 * can be newer than a later notification's: each request is numbered as it is
 * sent (one session answers in that order) and a change to a key older than
 * the one last applied to it is dropped — a name missing from a list taken
 * between a delete and a create under the key must not delete the record a
 * newer read already showed.
 */
export class PrefixWatch implements WatchSubscription {
  private queue: Promise<void> = Promise.resolve();
  private ended = false;
  private closed = false;
  /** Requests sent so far: each read and list is numbered when sent. */
  private sent = 0;
  /** The number of the newest request each key's last applied change came from; cleared whenever no request is out. */
  private readonly appliedFrom = new Map<RecordKey, number>();
  /** Queued notifications not yet applied: while none is, every later request is newer than all applied. */
  private inFlight = 0;

  constructor(
    private readonly host: WatchHost,
    readonly prefix: string,
    private readonly listener: WatchListener,
    private known: Map<RecordKey, string>,
    private position: JournalPosition,
    private zxid: bigint,
    /** The revision of the last event delivered (the start revision before any). */
    private revision: string,
  ) {}

  /** Compares the whole cluster with what the listener knows, then follows notifications. */
  begin(): void {
    this.enqueueChildren(true);
  }

  /** The cluster znode's children changed. */
  childrenChanged(): void {
    this.enqueueChildren(false);
  }

  /**
   * A record's znode changed or was deleted. A delete is read too, never
   * assumed: a list or read sent before this notification may have been
   * answered after the key was created again (it lists the key as known, or
   * reads the new node), and it is applied before this notification, so taking
   * the key as gone here would lose the new node until its next change (no
   * watch is armed on it). The read, sent after every earlier request, sees
   * the server at least as late as any of them. `_deleted`: the notification
   * was NODE_DELETED, read all the same.
   */
  nodeChanged(key: RecordKey, _deleted = false): void {
    if (!key.startsWith(this.prefix)) return;
    this.enqueue(this.read(key).then((change) => [change]));
  }

  private read(key: RecordKey): Promise<Change> {
    const sent = ++this.sent;
    return this.host.read(key).then((read) => ({ key, read, sent }));
  }

  /** Ends the watch with `error` (delivered once, asynchronously). */
  end(error: RegistryError): void {
    if (this.ended) return;
    this.ended = true;
    this.host.detach(this);
    queueMicrotask(() => {
      if (this.closed) return;
      try {
        this.listener.error(error);
      } catch (err) {
        this.host.logger.error({ err }, '[rollcall] [zookeeper] a watch listener threw');
      }
    });
  }

  close(): void {
    this.closed = true;
    this.ended = true;
    this.host.detach(this);
  }

  private enqueueChildren(full: boolean): void {
    this.inFlight++;
    const listed = ++this.sent;
    const reads = this.host.children().then(async ({ keys, pzxid }) => {
      const under = keys.filter((k) => k.startsWith(this.prefix));
      // Only new names need a read, unless this is the full comparison of a (re)start.
      const toRead = full ? under : under.filter((k) => !this.known.has(k));
      const read = await Promise.all(toRead.map((key) => this.read(key)));
      return { present: new Set(under), read, pzxid };
    });
    reads.catch(() => {});
    this.queue = this.queue
      .then(() => reads)
      .then(
        ({ present, read, pzxid }) => {
          if (this.ended) return;
          if (pzxid > this.zxid) this.zxid = pzxid;
          const changes: Change[] = [];
          for (const key of this.known.keys()) if (key.startsWith(this.prefix) && !present.has(key)) changes.push({ key, read: undefined, sent: listed });
          changes.push(...read);
          // Names that appeared in the list but were known when it was read, then deleted by an earlier notification: read them now.
          const readKeys = new Set(read.map((r) => r.key));
          const missed = [...present].filter((k) => !readKeys.has(k) && !this.known.has(k));
          this.apply(changes);
          for (const key of missed) this.nodeChanged(key);
          // The start revision was checked when the watch began: once compared, the listener is synced.
          if (full) this.emit({ type: 'progress', revision: this.revision, synced: true });
        },
        (error: RegistryError) => this.end(error),
      )
      .finally(() => this.settled());
  }

  private enqueue(reads: Promise<Change[]>): void {
    this.inFlight++;
    // Its failure is handled in turn, in the queue; until then it must not count as unhandled.
    reads.catch(() => {});
    this.queue = this.queue
      .then(() => reads)
      .then(
        (changes) => {
          if (!this.ended) this.apply(changes);
        },
        (error: RegistryError) => this.end(error),
      )
      .finally(() => this.settled());
  }

  /** A queued notification was applied (or failed): with none left, no answer can be older than what was applied. */
  private settled(): void {
    if (--this.inFlight === 0) this.appliedFrom.clear();
  }

  /** Applies reads in zxid order (deletes first: their zxid is unknown but not later than the list that showed them gone). */
  private apply(changes: Change[]): void {
    const deletes: RecordKey[] = [];
    const puts: Exclude<NodeRead, { kind: 'missing' }>[] = [];
    for (const { key, read, sent } of changes) {
      // Older than what was last applied to the key (a list's read of it answered after this request was sent): stale.
      if ((this.appliedFrom.get(key) ?? 0) > sent) continue;
      this.appliedFrom.set(key, sent);
      if (!read || read.kind === 'missing') deletes.push(key);
      else puts.push(read);
    }
    puts.sort((a, b) => (a.mzxid < b.mzxid ? -1 : a.mzxid > b.mzxid ? 1 : 0));
    for (const key of deletes) {
      if (!this.known.has(key)) continue;
      this.known.delete(key);
      this.deliver(key, null, (revision) => ({ type: 'delete', key, revision }));
    }
    for (const read of puts) {
      const key = read.kind === 'record' ? read.stored.key : read.entry.key;
      const version = read.kind === 'record' ? read.stored.version : read.entry.version;
      if (this.known.get(key) === version) continue;
      if (read.mzxid > this.zxid) this.zxid = read.mzxid;
      this.known.set(key, version);
      this.deliver(key, version, (revision) => (read.kind === 'record' ? { type: 'put', record: read.stored, revision } : { type: 'corrupt', entry: read.entry, revision }));
    }
  }

  private deliver(key: RecordKey, version: string | null, event: (revision: string) => WatchEvent): void {
    if (this.ended) return;
    const next = this.host.journal.next(this.position, key, version, this.zxid);
    this.position = next.position;
    this.revision = next.token;
    this.emit(event(next.token), key);
  }

  private emit(event: WatchEvent, key?: RecordKey): void {
    if (this.ended) return;
    try {
      this.listener.event(event);
    } catch (err) {
      this.host.logger.error({ err, key }, '[rollcall] [zookeeper] a watch listener threw');
    }
  }
}
