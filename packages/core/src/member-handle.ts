import { Backoff } from './backoff.js';
import type { Clock, Timer } from './clock.js';
import { Emitter } from './emitter.js';
import { ClosedError, ErrorCode, hasCode, LeaseLostError, UnavailableError } from './errors.js';
import { formatMicroTime, type JsonValue, type LeaseRecord } from './lease-record.js';
import type { Logger } from './logger.js';
import type { KeptMember, LivenessStrategy, MemberAfterLost, MemberKeeper, OwnRecord } from './member-liveness.js';
import { isMarked } from './liveness-judge.js';
import { checkOwn, createAnew, deleteOwn, renewOwn, Superseded, withdrawOwn, type Slot } from './member-writes.js';
import { MemberValidity, type MemberLossReason } from './member-validity.js';
import { isWithdrawn } from './member-withdraw.js';
import type { MonitoredStore } from './monitored-store.js';
import type { RecordKey, StoredRecord } from './store.js';
import { toLeaseSeconds, type MemberTiming } from './timing.js';

/** A member's incarnation ended without a withdraw: its handle's `lost` event. */
export interface MemberLostEvent {
  role: string;
  id: string;
  /** The incarnation that ended: its member record's creation ({@link StoredRecord.created}). */
  incarnation: string;
  reason: MemberLossReason;
}

/** A lost member announced again as a new incarnation (`registry.member.afterLost=reannounce`): its handle's `reannounced` event. */
export interface MemberReannouncedEvent {
  role: string;
  id: string;
  /** The new incarnation: its new member record's creation. */
  incarnation: string;
  /** The incarnation that was lost. */
  previous: string;
}

/** What a member handle emits about itself. */
export interface MemberHandleEvents {
  /**
   * This incarnation ended: by the renew deadline (emitted by its own clock
   * before any peer may report it removed, unless the process was paused past
   * it), or found deleted or taken by a write. Once per incarnation; a
   * notification a pause can delay: work reads `alive` or `signal`.
   */
  lost: MemberLostEvent;
  /** A new incarnation was announced after a loss. */
  reannounced: MemberReannouncedEvent;
}

/** @internal */
export interface MemberHandleOptions {
  role: string;
  id: string;
  key: RecordKey;
  /** The registry's liveness mode: it keeps this member alive. */
  liveness: Pick<LivenessStrategy, 'keep'>;
  payload: JsonValue | undefined;
  timing: MemberTiming;
  afterLost: MemberAfterLost;
  /** Ends the process (`afterLost: 'exit'`). */
  exit: (code: number) => void;
  store: MonitoredStore;
  clock: Clock;
  logger: Logger;
  /** Checks a payload before it is written; throws INVALID_ARGUMENT or PAYLOAD_TOO_LARGE. */
  validatePayload: (payload: JsonValue | undefined) => void;
  onWithdraw: () => void;
}

/** One incarnation: one create of the member record, kept alive by its own keeper until lost or withdrawn. */
interface Incarnation {
  readonly acquireTime: string;
  readonly member: Slot;
  keeper: MemberKeeper;
  /** Set by the create of the member record. */
  validity: MemberValidity | undefined;
  /** While its keeper announces it: the only time its records may be created. */
  starting: boolean;
  /** For a re-announce: the lost incarnation, whose record it may remove; any other live one found in the way is a successor's. */
  readonly previous: string | undefined;
}

/** The member record `inc` writes: the member's id as holder, its lease, the incarnation's acquire time and liveness, `renewTime` now. */
function memberRecord(id: string, timing: MemberTiming, inc: Incarnation, renewTime: string, payload: JsonValue | undefined): LeaseRecord {
  return {
    holderIdentity: id,
    leaseDurationSeconds: toLeaseSeconds(timing.leaseDurationMs),
    acquireTime: inc.acquireTime,
    renewTime,
    leaseTransitions: 1,
    ...(payload === undefined ? {} : { payload }),
    liveness: inc.keeper.liveness,
  };
}

/** The exit code of `afterLost: 'exit'`: EX_TEMPFAIL, a supervisor's cue to start it again. */
const EXIT_CODE = 75;

/**
 * An announced member: its payload, its writes in order, its withdraw, and
 * its validity by its own clock. Keeping it alive is its liveness mode's
 * ({@link MemberKeeper}): in the `heartbeat` mode each heartbeat rewrites the
 * member record, in the `reaper` mode it renews a heartbeat record, in a Ready
 * pod nothing is written at all. Each announce is an incarnation, a record
 * created anew; an incarnation that is lost never writes again.
 */
export class MemberHandle extends Emitter<MemberHandleEvents> {
  private inc: Incarnation;
  /** The last incarnation that had a record: what `alive`, `signal` and `incarnation` describe until the next one is created. */
  private shown: Incarnation | undefined;
  private current: JsonValue | undefined;
  /** The payload of the last successful write. */
  private written: JsonValue | undefined;
  private writing: Promise<void> = Promise.resolve();
  private withdrawn = false;
  private exited = false;
  private retry: Timer | undefined;
  private readonly backoff: Backoff;

  /** @internal */
  constructor(private readonly options: MemberHandleOptions) {
    super(options.logger);
    this.current = options.payload;
    this.backoff = new Backoff({ clock: options.clock, initialMs: options.timing.heartbeatIntervalMs / 5, maxMs: options.timing.heartbeatIntervalMs });
    this.inc = this.incarnation_();
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
   * Whether this member may act as one now: its incarnation is not lost,
   * withdrawn or past its renew deadline — read from the clock at this moment,
   * so a process resumed from a pause reads false before any timer has run.
   */
  get alive(): boolean {
    return !this.withdrawn && this.shown === this.inc && this.inc.validity !== undefined && this.inc.validity.alive;
  }

  /** Aborted when the current incarnation is lost or withdrawn; after a re-announce, the new incarnation's. */
  get signal(): AbortSignal {
    return (this.shown ?? this.inc).validity?.signal ?? AbortSignal.abort('not announced');
  }

  /** The current incarnation: its member record's creation ({@link StoredRecord.created}); undefined before the first record. */
  get incarnation(): string | undefined {
    return this.shown?.member.own?.created;
  }

  /** Writes the first record; rejects (and announces nothing) if the store refuses. */
  async announce(): Promise<void> {
    await this.start(this.inc);
    this.checkAfterStart(this.inc);
  }

  /**
   * Replaces the payload and writes it at once, without waiting for the next
   * heartbeat. Rejects with CLOSED when a withdraw overtook it before its
   * payload was written, and LEASE_LOST when the member was lost first or is
   * being announced again (reason `reannouncing`): the re-announce carries the
   * payload.
   */
  async update(payload: JsonValue): Promise<void> {
    if (this.withdrawn) throw new ClosedError(`member ${this.options.role}/${this.options.id} was withdrawn`);
    this.options.validatePayload(payload);
    this.current = payload;
    const inc = this.inc;
    try {
      await this.enqueue(inc, async () => {
        // Between a loss and the new incarnation's record there is nothing to write: the re-announce carries `current`.
        if (!inc.member.own && inc.previous !== undefined) {
          throw new LeaseLostError('reannouncing', `member ${this.options.role}/${this.options.id} is being announced again as a new incarnation (its last one was lost); that announce carries this payload`);
        }
        await this.writeMember(inc);
      });
    } catch (err) {
      // A heartbeat queued before this update may have gone out after it, carrying its payload: then it was written.
      if (hasCode(err, ErrorCode.CLOSED) && this.written === payload) return;
      throw err;
    }
  }

  /** Heartbeats now, e.g. after a reconnect. Failures are logged, not thrown. */
  heartbeatNow(): void {
    if (this.withdrawn || this.inc.starting || !this.inc.validity) return;
    this.inc.keeper.beat().catch((err: unknown) => this.options.logger.debug({ err, key: this.options.key }, '[rollcall] heartbeat failed'));
  }

  /** Stops heartbeating and deletes the record; peers see `removed` through the watch. Idempotent. */
  async withdraw(): Promise<void> {
    if (this.withdrawn) return;
    // Graceful only while alive: a lost incarnation's work stopped without being handed over, so it is failed over.
    const graceful = this.alive;
    this.withdrawn = true;
    this.retry?.cancel();
    const inc = this.inc;
    inc.keeper.stop();
    inc.validity?.end();
    this.options.onWithdraw();
    await this.writing.catch(() => {});
    // The member record first, so readers see `removed` at once; what a crash leaves after it is its mode's to clean.
    // Only a record of its own (between a loss and the new incarnation, the lost one): never a successor's.
    const own = inc.member.own ?? this.shown?.member.own;
    await (graceful ? withdrawOwn(this.options.store, this.options.key, own, () => this.options.clock.wallNow()) : deleteOwn(this.options.store, this.options.key, own));
    await inc.keeper.withdrawn();
  }

  private incarnation_(previous?: string): Incarnation {
    const inc: Incarnation = { acquireTime: formatMicroTime(this.options.clock.wallNow()), member: { own: undefined }, keeper: undefined!, validity: undefined, starting: false, previous };
    inc.keeper = this.options.liveness.keep(this.kept(inc));
    return inc;
  }

  /** Announces `inc`: its keeper writes its records. A failure leaves nothing of it running. */
  private async start(inc: Incarnation): Promise<void> {
    inc.starting = true;
    try {
      await inc.keeper.start();
    } catch (err) {
      // A keeper stopped is stopped for good: a retry starts a fresh one.
      inc.keeper.stop();
      inc.keeper = this.options.liveness.keep(this.kept(inc));
      inc.validity?.end();
      inc.validity = undefined;
      inc.member.own = undefined;
      throw err;
    } finally {
      inc.starting = false;
    }
    // Alive from here: an incarnation half announced (its heartbeat record still to come) is not one to act as.
    this.shown = inc;
  }

  /** Read last before announcing: a reply back after its deadline must not announce a live member. */
  private checkAfterStart(inc: Incarnation): void {
    if (inc.validity && !inc.validity.alive) this.lose(inc, 'renew-deadline');
  }

  /** What the keeper of `inc` may do: its writes, in order. */
  private kept(inc: Incarnation): KeptMember {
    const { role, id, key, timing, clock, logger, store } = this.options;
    return {
      role,
      id,
      key,
      timing,
      clock,
      logger,
      writeMember: () => this.writeMember(inc),
      deleteMember: () => withdrawOwn(store, key, inc.member.own, () => clock.wallNow()),
      renewed: (sentAt) => inc.validity?.renewed(sentAt),
      vouched: () => inc.validity?.recheck(),
      checkMember: () => this.check(inc),
      enqueue: (write) => this.enqueue(inc, write),
      own: (recordKey): OwnRecord => {
        const slot: Slot = { own: undefined };
        return {
          put: () => this.put(inc, slot, recordKey, () => undefined),
          delete: () => deleteOwn(store, recordKey, slot.own),
        };
      },
    };
  }

  /** Queues a write after the one in flight; rejects with CLOSED when a withdraw overtook it, LEASE_LOST when `inc` was lost first: its write never happens. */
  private enqueue(inc: Incarnation, write: () => Promise<void>): Promise<void> {
    const next = this.writing
      .catch(() => {})
      .then(() => {
        const { role, id } = this.options;
        if (this.withdrawn) throw new ClosedError(`member ${role}/${id} was withdrawn before this write`);
        if (inc !== this.inc || inc.validity?.reason) throw new LeaseLostError(inc.validity?.reason ?? 'renew-deadline', `member ${role}/${id} was lost before this write; a new incarnation carries its payload`);
        return write();
      });
    this.writing = next;
    return next;
  }

  /** Writes the member record of `inc` with the current payload; its create starts the incarnation's validity. Resolves with the write's send time. */
  private async writeMember(inc: Incarnation): Promise<number> {
    const created = inc.member.own === undefined;
    let payload: JsonValue | undefined;
    const sentAt = await this.put(inc, inc.member, this.options.key, () => (payload = this.current), true);
    this.written = payload;
    if (created) {
      inc.validity = new MemberValidity(this.options.clock, inc.keeper.renewDeadlineMs, sentAt, (reason) => this.onLost(inc, reason), () => inc.keeper.vouchedUntil?.());
    }
    return sentAt;
  }

  /**
   * Creates one of `inc`'s records while it starts (an earlier incarnation's
   * removed first), else compare-and-sets the version last written; a record
   * found gone or written by someone else loses `inc` and rejects. Resolves
   * with the write's send time.
   */
  private async put(inc: Incarnation, slot: Slot, key: RecordKey, payload: () => JsonValue | undefined, isMember = false): Promise<number> {
    const { store, clock, id } = this.options;
    const sentAt = clock.now();
    if (!slot.own) {
      if (!inc.starting) throw new UnavailableError(`member ${this.options.role}/${id} has no record to write until it is announced`);
      // A first announce removes whatever an earlier process left; a re-announce only its own records (the lost one, an
      // earlier attempt of this one whose reply it never had) or a mark, never a successor's.
      const mayRemove = (found: StoredRecord) =>
        inc.previous === undefined || found.created === inc.previous || found.record.acquireTime === inc.acquireTime || isMarked(found.record) || isWithdrawn(found.record) || found.record.holderIdentity !== id;
      slot.own = await createAnew(store, key, () => memberRecord(this.options.id, this.options.timing, inc, formatMicroTime(this.options.clock.wallNow()), payload()), isMember, clock, isMember ? mayRemove : undefined);
      return sentAt;
    }
    // Past the deadline the incarnation is over even if a write could still land: an overdue timer must not extend it.
    const beforeSend = () => {
      if (inc.validity?.reason) throw new LeaseLostError(inc.validity.reason, `member ${this.options.role}/${id} was lost`);
      if (inc.validity && !inc.validity.alive) {
        this.lose(inc, 'renew-deadline');
        throw new LeaseLostError('renew-deadline', `member ${this.options.role}/${id} is past its renew deadline`);
      }
    };
    const outcome = await renewOwn(store, key, slot, id, () => memberRecord(this.options.id, this.options.timing, inc, formatMicroTime(this.options.clock.wallNow()), payload()), beforeSend);
    if (outcome !== 'written') {
      this.lose(inc, outcome);
      throw new LeaseLostError(outcome, `member ${this.options.role}/${id}: its record was ${outcome === 'deleted' ? 'deleted' : outcome === 'superseded' ? 'taken over by a later incarnation' : 'written by someone else'}`);
    }
    return sentAt;
  }

  /** Reads `inc`'s member record: the send time when it is still its own; gone, marked or a successor's loses `inc`. */
  private async check(inc: Incarnation): Promise<number> {
    const { store, key, clock, role, id } = this.options;
    const own = inc.member.own;
    if (!own || !inc.validity || inc.validity.reason || inc !== this.inc) throw new LeaseLostError(inc.validity?.reason ?? 'renew-deadline', `member ${role}/${id} has no live record to check`);
    if (!inc.validity.alive) {
      this.lose(inc, 'renew-deadline');
      throw new LeaseLostError('renew-deadline', `member ${role}/${id} is past its renew deadline`);
    }
    const sentAt = clock.now();
    const outcome = checkOwn(await store.get(key), own, id);
    if (outcome === 'present') return sentAt;
    this.lose(inc, outcome);
    throw new LeaseLostError(outcome, `member ${role}/${id}: its record was found ${outcome}`);
  }

  private lose(inc: Incarnation, reason: MemberLossReason): void {
    inc.validity?.lose(reason);
  }

  /** `inc` is lost: it writes nothing more; then the application's choice, a new incarnation or the end of the process. */
  private onLost(inc: Incarnation, reason: MemberLossReason): void {
    const { role, id, key, logger } = this.options;
    inc.keeper.stop();
    const incarnation = inc.member.own?.created ?? '';
    logger.warn({ key, incarnation, reason }, '[rollcall] member lost');
    this.emit('lost', { role, id, incarnation, reason });
    if (this.withdrawn || inc !== this.inc) return;
    if (this.options.afterLost === 'exit') {
      if (!this.exited) this.options.exit(EXIT_CODE);
      this.exited = true;
      return;
    }
    // A successor holds this id: announcing again would take it from them.
    if (reason === 'superseded') return;
    this.inc = this.incarnation_(incarnation);
    this.reannounce(this.inc, incarnation);
  }

  /** Announces `inc` after the writes in flight, retried with backoff until it lands, the member is withdrawn, or a successor is found holding its id. */
  private reannounce(inc: Incarnation, previous: string): void {
    this.enqueue(inc, () => this.start(inc)).then(
      () => {
        this.backoff.reset();
        const incarnation = inc.member.own?.created ?? '';
        this.options.logger.info({ key: this.options.key, incarnation, previous }, '[rollcall] member announced again as a new incarnation');
        this.emit('reannounced', { role: this.options.role, id: this.options.id, incarnation, previous });
        this.checkAfterStart(inc);
      },
      (err: unknown) => {
        if (this.withdrawn || inc !== this.inc) return;
        if (err instanceof Superseded) {
          this.options.logger.warn({ key: this.options.key, previous, holder: err.found.created }, '[rollcall] a later incarnation of this member holds its record; not announced again');
          return;
        }
        this.options.logger.debug({ err, key: this.options.key }, '[rollcall] could not announce the member again; retrying');
        this.retry = this.backoff.schedule(() => {
          if (!this.withdrawn && inc === this.inc) this.reannounce(inc, previous);
        });
      },
    );
  }
}
