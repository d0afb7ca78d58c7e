import type { Clock, Timer } from './clock.js';
import { deleteRecord } from './delete-record.js';
import { ClosedError, ErrorCode, hasCode } from './errors.js';
import { formatMicroTime, type JsonValue, type LeaseRecord, type RecordLiveness } from './lease-record.js';
import type { Logger } from './logger.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, StoredRecord } from './store.js';
import { toLeaseSeconds, type MemberTiming } from './timing.js';

/** @internal */
export interface MemberHandleOptions {
  role: string;
  id: string;
  key: RecordKey;
  /** The record heartbeats renew when it is not `key` (the `reaper` mode's); undefined when each heartbeat rewrites `key`. */
  heartbeatKey: RecordKey | undefined;
  /** False when something other than heartbeats vouches for the member: `key` is written on announce, payload change and withdraw only. */
  heartbeats: boolean;
  /** What the member record says of its liveness. */
  liveness: RecordLiveness;
  /** Checked before the first write (the pod mode: the pod serves the role's readiness). */
  prepare?: () => Promise<void>;
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
 *
 * In the `reaper` mode the member record is written on announce and payload
 * change only, and each heartbeat renews the heartbeat record instead; when
 * that is gone (the reaper expired this member while it was cut off), the
 * heartbeat announces both again.
 */
export class MemberHandle {
  /** Our last write of the member record. */
  private readonly member: { own: StoredRecord | undefined } = { own: undefined };
  /** Our last write of the heartbeat record (a separate one, as in the `reaper` mode). */
  private readonly beat: { own: StoredRecord | undefined } = { own: undefined };
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
    await this.options.prepare?.();
    await this.write();
    if (this.options.heartbeatKey !== undefined) {
      try {
        await this.put(this.beat, this.options.heartbeatKey, () => undefined, true);
      } catch (err) {
        // Announce nothing: a member record without a heartbeat would be reaped a lease later anyway.
        await deleteRecord(this.options.store, this.options.key, this.member.own, this.options.id).catch(() => {});
        throw err;
      }
    }
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
    this.enqueue(this.options.heartbeatKey === undefined ? () => this.write() : () => this.renewBeat()).catch((err: unknown) => this.options.logger.debug({ err, key: this.options.key }, '[rollcall] heartbeat failed'));
  }

  /** Stops heartbeating and deletes the record; peers see `removed` through the watch. Idempotent. */
  async withdraw(): Promise<void> {
    if (this.withdrawn) return;
    this.withdrawn = true;
    this.timer?.cancel();
    this.options.onWithdraw();
    await this.writing.catch(() => {});
    // The member record first, so readers see `removed` at once; a heartbeat record left by a crash here is the reaper's to delete.
    await deleteRecord(this.options.store, this.options.key, this.member.own, this.options.id);
    if (this.options.heartbeatKey !== undefined) await deleteRecord(this.options.store, this.options.heartbeatKey, this.beat.own, this.options.id);
  }

  private scheduleHeartbeat(): void {
    if (this.withdrawn || !this.options.heartbeats) return;
    this.timer = this.options.clock.setTimeout(() => {
      this.heartbeatNow();
      this.scheduleHeartbeat();
    }, this.options.timing.heartbeatIntervalMs);
  }

  /** Queues a write after the one in flight; rejects with CLOSED when a withdraw overtook it, as its write never happens. */
  private enqueue(write: () => Promise<void> = () => this.write()): Promise<void> {
    const next = this.writing.catch(() => {}).then(() => {
      if (this.withdrawn) throw new ClosedError(`member ${this.options.role}/${this.options.id} was withdrawn before this write`);
      return write();
    });
    this.writing = next;
    return next;
  }

  private record(own: StoredRecord | undefined, payload: JsonValue | undefined): LeaseRecord {
    return {
      holderIdentity: this.options.id,
      leaseDurationSeconds: toLeaseSeconds(this.options.timing.leaseDurationMs),
      acquireTime: this.acquireTime,
      renewTime: formatMicroTime(this.options.clock.wallNow()),
      leaseTransitions: own?.record.leaseTransitions ?? 1,
      ...(payload === undefined ? {} : { payload }),
      liveness: this.options.liveness,
    };
  }

  /** Writes the member record with the current payload. */
  private async write(): Promise<void> {
    this.written = (await this.put(this.member, this.options.key, () => this.current, true)).payload;
  }

  /** A heartbeat in the `reaper` mode; the heartbeat record gone means the reaper removed this member: announce again. */
  private async renewBeat(): Promise<void> {
    try {
      await this.put(this.beat, this.options.heartbeatKey!, () => undefined, false);
    } catch (err) {
      if (!hasCode(err, ErrorCode.NOT_FOUND)) throw err;
      this.options.logger.info({ key: this.options.key }, '[rollcall] heartbeat record gone (expired by the reaper?); announcing again');
      await this.write();
      await this.put(this.beat, this.options.heartbeatKey!, () => undefined, true);
    }
  }

  /**
   * Create or compare-and-set; a record found in the way (an earlier
   * incarnation of this id) is taken over. With `recreate` false, a record
   * that vanished is NOT_FOUND rather than written again. Returns the record written.
   */
  private async put(slot: { own: StoredRecord | undefined }, key: RecordKey, payload: () => JsonValue | undefined, recreate: boolean): Promise<LeaseRecord> {
    const { store } = this.options;
    for (let attempt = 0; ; attempt++) {
      try {
        const record = this.record(slot.own, payload());
        slot.own = slot.own ? await store.update(key, record, slot.own.version) : await store.create(key, record);
        return record;
      } catch (err) {
        if (!recreate && hasCode(err, ErrorCode.NOT_FOUND)) {
          slot.own = undefined;
          throw err;
        }
        if (attempt >= 3 || !hasCode(err, ErrorCode.CONFLICT, ErrorCode.ALREADY_EXISTS, ErrorCode.NOT_FOUND)) throw err;
        slot.own = hasCode(err, ErrorCode.NOT_FOUND) ? undefined : await store.get(key);
      }
    }
  }
}
