import { BackendActivityReporter, type BackendOperation } from './backend-activity.js';
import type { Clock } from './clock.js';
import type { ConnectionMonitor } from './connection-monitor.js';
import { RegistryError, UnavailableError } from './errors.js';
import type { LeaseRecord } from './lease-record.js';
import { silentLogger } from './logger.js';
import type { RecordKey, RecordList, RecordStore, ScopeOptions, StoredRecord, WatchListener, WatchSubscription } from './store.js';
import { supports } from './store-supports.js';

/**
 * The store as the algorithms use it: every call bounded by a timeout, and its
 * outcome reported to the connection monitor. A timed-out write may still land;
 * compare-and-set keeps that safe. Every call, watch event and watch break is
 * also reported to `activity`, for instrumentation.
 * @internal
 */
export class MonitoredStore {
  constructor(
    readonly inner: RecordStore,
    private readonly clock: Clock,
    private readonly requestTimeoutMs: number,
    private readonly monitor: ConnectionMonitor,
    readonly activity: BackendActivityReporter = new BackendActivityReporter(silentLogger),
  ) {}

  get backend(): string {
    return this.inner.backend;
  }

  get(key: RecordKey): Promise<StoredRecord | undefined> {
    return this.call('get', () => this.inner.get(key));
  }

  create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord> {
    return this.call('create', () => this.inner.create(key, record));
  }

  update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord> {
    return this.call('update', () => this.inner.update(key, record, version));
  }

  delete(key: RecordKey, version: string): Promise<void> {
    return this.call('delete', () => this.inner.delete(key, version));
  }

  /** The store's permission check (`supports.holdCheck`); resolves when it declares none. */
  assertCanHold(key: RecordKey): Promise<void> {
    return supports(this.inner, 'holdCheck') ? this.call('assertCanHold', () => this.inner.assertCanHold!(key)) : Promise.resolve();
  }

  list(prefix: string, options?: ScopeOptions): Promise<RecordList> {
    return this.call('list', () => this.inner.list(prefix, options));
  }

  watch(prefix: string, fromRevision: string, listener: WatchListener, options?: ScopeOptions): WatchSubscription {
    let subscription: WatchSubscription;
    try {
      subscription = this.inner.watch(prefix, fromRevision, {
        event: (event) => {
          this.monitor.succeeded();
          this.activity.report({ type: 'watchEvent', event: event.type });
          listener.event(event);
        },
        error: (error) => {
          this.monitor.failed(error);
          this.activity.report({ type: 'watchEnded', code: error.code });
          listener.error(error);
        },
      }, options);
    } catch (err) {
      this.activity.request('watch', 0, true, err);
      throw err;
    }
    this.activity.request('watch', 0, false);
    return subscription;
  }

  private call<T>(operation: BackendOperation, run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const startedAt = this.clock.now();
      const timer = this.clock.setTimeout(() => {
        if (settled) return;
        settled = true;
        const error = new UnavailableError(`${operation} did not answer within ${this.requestTimeoutMs} ms`, { backend: this.backend });
        this.monitor.failed(error, startedAt);
        this.activity.request(operation, this.clock.now() - startedAt, true, error);
        reject(error);
      }, this.requestTimeoutMs);
      let pending: Promise<T>;
      try {
        pending = run();
      } catch (err) {
        pending = Promise.reject(err);
      }
      pending.then(
        (value) => {
          if (settled) return;
          settled = true;
          timer.cancel();
          this.monitor.succeeded();
          this.activity.request(operation, this.clock.now() - startedAt, false);
          resolve(value);
        },
        (err: unknown) => {
          if (settled) return;
          settled = true;
          timer.cancel();
          // A refusal (CONFLICT, NOT_FOUND, ...) is still an answer from the backend.
          if (err instanceof RegistryError && err.code !== 'UNAVAILABLE') this.monitor.succeeded();
          else this.monitor.failed(err, startedAt);
          this.activity.request(operation, this.clock.now() - startedAt, true, err);
          reject(err);
        },
      );
    });
  }
}
