import type { Clock } from './clock.js';
import { deleteRecord } from './delete-record.js';
import { ClosedError, ErrorCode, hasCode } from './errors.js';
import { formatMicroTime, type JsonValue, type LeaseRecord, type RecordLiveness } from './lease-record.js';
import type { Logger } from './logger.js';
import type { KeptMember, LivenessStrategy, MemberKeeper, OwnRecord } from './member-liveness.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, StoredRecord } from './store.js';
import { toLeaseSeconds, type MemberTiming } from './timing.js';

/** @internal */
export interface MemberHandleOptions {
  role: string;
  id: string;
  key: RecordKey;
  /** The registry's liveness mode: it keeps this member alive. */
  liveness: Pick<LivenessStrategy, 'keep'>;
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
 * An announced member: its payload, its writes in order, and its withdraw.
 * Keeping it alive is its liveness mode's ({@link MemberKeeper}): in the
 * `heartbeat` mode each heartbeat rewrites the member record with the current
 * payload, in the `reaper` mode it renews a heartbeat record, in a Ready pod
 * nothing is written at all; a member whose records vanished (peers expired it
 * while this process was cut off) is announced again by its next heartbeat.
 */
export class MemberHandle {
  /** Our last write of the member record. */
  private readonly member: { own: StoredRecord | undefined } = { own: undefined };
  private current: JsonValue | undefined;
  /** The payload of the last successful write. */
  private written: JsonValue | undefined;
  private writing: Promise<void> = Promise.resolve();
  private withdrawn = false;
  private readonly acquireTime: string;
  private readonly keeper: MemberKeeper;
  private readonly recordLiveness: RecordLiveness;

  /** @internal */
  constructor(private readonly options: MemberHandleOptions) {
    this.current = options.payload;
    this.acquireTime = formatMicroTime(options.clock.wallNow());
    this.keeper = options.liveness.keep(this.kept());
    this.recordLiveness = this.keeper.liveness;
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

  /**
   * This process's incarnation of the member: the creation
   * (`StoredRecord.created`) of the member record it last wrote, as peers'
   * events and `members()` name it. Set once `announce()` resolves; it
   * changes when the handle writes its record anew after it was gone
   * (undefined while that write is in flight).
   */
  get incarnation(): string | undefined {
    return this.member.own?.created;
  }

  /** Writes the first record; rejects (and announces nothing) if the store refuses. */
  async announce(): Promise<void> {
    await this.keeper.start();
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
    this.keeper.beat().catch((err: unknown) => this.options.logger.debug({ err, key: this.options.key }, '[rollcall] heartbeat failed'));
  }

  /** Stops heartbeating and deletes the record; peers see `removed` through the watch. Idempotent. */
  async withdraw(): Promise<void> {
    if (this.withdrawn) return;
    this.withdrawn = true;
    this.keeper.stop();
    this.options.onWithdraw();
    await this.writing.catch(() => {});
    // The member record first, so readers see `removed` at once; what a crash leaves after it is its mode's to clean.
    await deleteRecord(this.options.store, this.options.key, this.member.own, this.options.id);
    await this.keeper.withdrawn();
  }

  /** What the keeper may do: this handle's writes, in order. */
  private kept(): KeptMember {
    const { role, id, key, timing, clock, logger, store } = this.options;
    return {
      role,
      id,
      key,
      timing,
      clock,
      logger,
      writeMember: () => this.write(),
      deleteMember: () => deleteRecord(store, key, this.member.own, id),
      enqueue: (write) => this.enqueue(write),
      own: (recordKey): OwnRecord => {
        const slot: { own: StoredRecord | undefined } = { own: undefined };
        return {
          put: async (recreate) => void (await this.put(slot, recordKey, () => undefined, recreate)),
          delete: () => deleteRecord(store, recordKey, slot.own, id),
        };
      },
    };
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
      liveness: this.recordLiveness,
    };
  }

  /** Writes the member record with the current payload. */
  private async write(): Promise<void> {
    this.written = (await this.put(this.member, this.options.key, () => this.current, true)).payload;
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
