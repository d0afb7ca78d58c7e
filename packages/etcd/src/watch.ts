import etcd3 from 'etcd3';
import { type Clock, type Logger, type RegistryError, RevisionTooOldError, type Timer, UnavailableError } from '@rollcall/core';
import type { WatchEvent, WatchListener, WatchSubscription } from '@rollcall/core/spi';
import { stopStream, type EtcdClientSlice, type WatchResponse, type WatchStream } from './client.js';
import { decodeRecord, prefixEnd, type KeySpace } from './codec.js';
import { BACKEND } from './errors.js';

/** What a watch needs of its store. */
export interface EtcdWatchHost {
  readonly client: Pick<EtcdClientSlice, 'watchClient'>;
  readonly keys: KeySpace;
  readonly logger: Logger;
  /** Where the creation bound and the progress requests are timed. */
  readonly clock: Clock;
  /** Bound on the watch being created, milliseconds. */
  readonly createTimeoutMs: number;
  isClosed(): boolean;
  /** Maps a native error of call `what` on `etcdKey`. */
  mapError(err: unknown, what: string, etcdKey: Buffer): RegistryError;
}

/** How often a watch asks etcd for a progress until it gets one, milliseconds: etcd drops a request while the watcher catches up. */
const PROGRESS_REQUEST_INTERVAL_MS = 200;

/**
 * One prefix watch on its own gRPC stream, of the changes after
 * `fromRevision`. It ends once, with `listener.error` — REVISION_TOO_OLD when
 * etcd compacted the revision — and never resumes by itself: core decides.
 */
export class EtcdWatch implements WatchSubscription {
  private stream: WatchStream | undefined;
  private createTimer: Timer | undefined;
  private progressTimer: Timer | undefined;
  private synced = false;
  private done = false;

  constructor(
    private readonly host: EtcdWatchHost,
    private readonly prefix: string,
    private readonly fromRevision: string,
    private readonly listener: WatchListener,
    private readonly onDone: () => void,
  ) {}

  start(): void {
    const etcdKey = this.host.keys.etcdKey(this.prefix);
    const what = `watch ${this.prefix || '(all)'}`;
    if (this.host.isClosed()) return this.failSoon(new UnavailableError('store closed', { backend: BACKEND }));
    if (typeof this.fromRevision !== 'string' || !/^\d+$/.test(this.fromRevision)) {
      return this.failSoon(new RevisionTooOldError(`watch from ${JSON.stringify(this.fromRevision)}: not a revision this store handed out; relist`, { backend: BACKEND }));
    }
    // From the revision itself (its change, if any, is filtered out): etcd answers a progress request only for a watcher whose start revision it has reached.
    const startRevision = this.fromRevision;
    this.createTimer = this.host.clock.setTimeout(
      () => this.fail(new UnavailableError(`watch ${this.host.keys.keyPrefix}${this.prefix}: not created within ${this.host.createTimeoutMs} ms`, { backend: BACKEND })),
      this.host.createTimeoutMs,
    );
    this.host.client.watchClient.watch().then(
      (stream) => {
        if (this.done) return void stopStream(stream);
        this.stream = stream;
        stream
          .on('data', (res) => this.onResponse(res))
          .on('error', (err) => this.fail(this.host.mapError(err, what, etcdKey)))
          .on('end', () => this.fail(new UnavailableError(`${what}: the server ended the stream`, { backend: BACKEND })));
        stream.write({ create_request: { key: etcdKey, range_end: prefixEnd(etcdKey), start_revision: startRevision, progress_notify: true } });
      },
      (err: unknown) => this.fail(this.host.mapError(err, what, etcdKey)),
    );
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    this.cleanup();
  }

  /** Ends the watch with `error`, once. */
  fail(error: RegistryError): void {
    if (this.done) return;
    this.done = true;
    this.cleanup();
    this.host.logger.debug({ backend: BACKEND, err: error, prefix: this.prefix }, '[rollcall] [etcd] watch ended');
    this.listener.error(error);
  }

  private failSoon(error: RegistryError): void {
    queueMicrotask(() => this.fail(error));
  }

  private onResponse(res: WatchResponse): void {
    if (this.done) return;
    if (res.canceled) {
      if (res.compact_revision && res.compact_revision !== '0') {
        return this.fail(new RevisionTooOldError(`watch from revision ${this.fromRevision}: compacted; the oldest revision kept is ${res.compact_revision}; relist`, { backend: BACKEND }));
      }
      if (!res.cancel_reason) return this.fail(new UnavailableError(`watch ${this.prefix || '(all)'}: the server canceled the watch`, { backend: BACKEND }));
      return this.fail(this.host.mapError(etcd3.castGrpcErrorMessage(res.cancel_reason), `watch ${this.prefix || '(all)'}`, this.host.keys.etcdKey(this.prefix)));
    }
    if (res.created) {
      this.createTimer?.cancel();
      this.requestProgress();
      // Established: tells core it sees again. At the start revision: the backlog after it is still on its way.
      return this.deliver({ type: 'progress', revision: this.fromRevision });
    }
    if (res.events.length === 0) {
      // etcd sends progress only to a synced watcher (a compacted start revision cancels it first): everything up to the header's revision is delivered.
      this.synced = true;
      this.progressTimer?.cancel();
      return this.deliver({ type: 'progress', revision: res.header.revision, synced: true });
    }
    for (const ev of res.events) {
      if (this.done) return;
      const revision = ev.kv.mod_revision;
      if (BigInt(revision) <= BigInt(this.fromRevision)) continue;
      const key = this.host.keys.recordKey(ev.kv.key);
      if (ev.type === 'Delete') {
        this.deliver({ type: 'delete', key, revision });
        continue;
      }
      const record = decodeRecord(key, ev.kv.value);
      this.deliver(record instanceof Error ? { type: 'corrupt', entry: { key, version: revision, error: record, created: ev.kv.create_revision }, revision } : { type: 'put', record: { key, version: revision, record, created: ev.kv.create_revision }, revision });
    }
  }

  private deliver(event: WatchEvent): void {
    try {
      this.listener.event(event);
    } catch (err) {
      this.host.logger.error({ backend: BACKEND, err }, '[rollcall] [etcd] a watch listener threw');
    }
  }

  /** Asks for a progress until a synced one arrives. */
  private requestProgress(): void {
    if (this.done || this.synced) return;
    this.stream?.write({ progress_request: {} });
    this.progressTimer = this.host.clock.setTimeout(() => this.requestProgress(), PROGRESS_REQUEST_INTERVAL_MS);
  }

  private cleanup(): void {
    this.createTimer?.cancel();
    this.progressTimer?.cancel();
    this.onDone();
    if (this.stream) stopStream(this.stream);
    this.stream = undefined;
  }
}
