import type { Clock, Timer } from './clock.js';
import { ClosedError, ErrorCode, hasCode } from './errors.js';
import { formatMicroTime, type JsonValue, type LeaseRecord } from './lease-record.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, StoredRecord } from './store.js';
import { toLeaseSeconds, type MemberTiming } from './timing.js';

/** @internal */
export interface MemberHandleOptions {
  role: string;
  id: string;
  key: RecordKey;
  payload: JsonValue | undefined;
  timing: MemberTiming;
  store: MonitoredStore;
  clock: Clock;
  logger: Logger;
  /** Checks a payload before it is written; throws INVALID_ARGUMENT or PAYLOAD_TOO_LARGE. */
  validatePayload: (payload: JsonValue | undefined) => void;
  onWithdraw: () => void;
}

/**
 * An announced member. It heartbeats every heartbeatIntervalMs, each renewal
 * carrying the current payload; if its record vanished (peers expired it while
 * this process was cut off), the next heartbeat announces it again.
 */
export class MemberHandle {
  private own: StoredRecord | undefined;
  private current: JsonValue | undefined;
  /** The payload of the last successful write. */
  private written: JsonValue | undefined;
  private writing: Promise<void> = Promise.resolve();
  private timer: Timer | undefined;
  private withdrawn = false;
  private readonly acquireTime: string;

  /** @internal */
  constructor(private readonly options: MemberHandleOptions) {
    this.current = options.payload;
    this.acquireTime = formatMicroTime(options.clock.wallNow());
  }

  get role(): string {
    return this.options.role;
  }

  get id(): string {
    return this.options.id;
  }

  /** The payload the next heartbeat carries. */
  get payload(): JsonValue | undefined {
    return this.current;
  }

  /** Writes the first record; rejects (and announces nothing) if the store refuses. */
  async announce(): Promise<void> {
    await this.write();
    this.scheduleHeartbeat();
  }

  /**
   * Replaces the payload and writes it at once, without waiting for the next
   * heartbeat. Rejects with CLOSED when a withdraw overtook it before its
   * payload was written.
   */
  async update(payload: JsonValue): Promise<void> {
    if (this.withdrawn) throw new ClosedError(`member ${this.options.role}/${this.options.id} was withdrawn`);
    this.options.validatePayload(payload);
    this.current = payload;
    try {
      await this.enqueue();
    } catch (err) {
      // A heartbeat queued before this update may have gone out after it, carrying its payload: then it was written.
      if (hasCode(err, ErrorCode.CLOSED) && this.written === payload) return;
      throw err;
    }
  }

  /** Heartbeats now, e.g. after a reconnect. Failures are logged, not thrown. */
  heartbeatNow(): void {
    if (this.withdrawn) return;
    this.enqueue().catch((err: unknown) => this.options.logger.debug({ err, key: this.options.key }, '[rollcall] heartbeat failed'));
  }

  /** Stops heartbeating and deletes the record; peers see `removed` through the watch. Idempotent. */
  async withdraw(): Promise<void> {
    if (this.withdrawn) return;
    this.withdrawn = true;
    this.timer?.cancel();
    this.options.onWithdraw();
    await this.writing.catch(() => {});
    const { store, key } = this.options;
    for (let attempt = 0; attempt < 3; attempt++) {
      const own = this.own ?? (await store.get(key));
      if (!own || own.record.holderIdentity !== this.options.id) return;
      try {
        await store.delete(key, own.version);
        return;
      } catch (err) {
        if (hasCode(err, ErrorCode.NOT_FOUND)) return;
        if (!hasCode(err, ErrorCode.CONFLICT)) throw err;
        this.own = undefined;
      }
    }
  }

  private scheduleHeartbeat(): void {
    if (this.withdrawn) return;
    this.timer = this.options.clock.setTimeout(() => {
      this.heartbeatNow();
      this.scheduleHeartbeat();
    }, this.options.timing.heartbeatIntervalMs);
  }

  /** Queues a write after the one in flight; rejects with CLOSED when a withdraw overtook it, as its write never happens. */
  private enqueue(): Promise<void> {
    const next = this.writing.catch(() => {}).then(() => {
      if (this.withdrawn) throw new ClosedError(`member ${this.options.role}/${this.options.id} was withdrawn before this write`);
      return this.write();
    });
    this.writing = next;
    return next;
  }

  private record(): LeaseRecord {
    return {
      holderIdentity: this.options.id,
      leaseDurationSeconds: toLeaseSeconds(this.options.timing.leaseDurationMs),
      acquireTime: this.acquireTime,
      renewTime: formatMicroTime(this.options.clock.wallNow()),
      leaseTransitions: this.own?.record.leaseTransitions ?? 1,
      ...(this.current === undefined ? {} : { payload: this.current }),
    };
  }

  /** Create or compare-and-set; a record found in the way (an earlier incarnation of this id) is taken over. */
  private async write(): Promise<void> {
    const { store, key } = this.options;
    for (let attempt = 0; ; attempt++) {
      try {
        const record = this.record();
        this.own = this.own ? await store.update(key, record, this.own.version) : await store.create(key, record);
        this.written = record.payload;
        return;
      } catch (err) {
        if (attempt >= 3 || !hasCode(err, ErrorCode.CONFLICT, ErrorCode.ALREADY_EXISTS, ErrorCode.NOT_FOUND)) throw err;
        this.own = hasCode(err, ErrorCode.NOT_FOUND) ? undefined : await store.get(key);
      }
    }
  }
}
