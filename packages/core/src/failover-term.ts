import { Backoff, type BackoffOptions } from './backoff.js';
import type { Clock, Timer } from './clock.js';
import { DelayQueue } from './delay-queue.js';
import { ErrorCode, hasCode } from './errors.js';
import { decide, type FailoverAction } from './failover-decision.js';
import { failoverKey, failoverPrefix, failoverRecord, failoverStateOf, parseFailoverKey, type FailoverReason, type FailoverState } from './failover-record.js';
import type { DeadIncarnation, FailoverEvents, FailoverHandler } from './failover-handler.js';
import { DoneRecords } from './failover-retention.js';
import type { JsonValue, LeaseRecord } from './lease-record.js';
import type { Logger } from './logger.js';
import type { MemberEvent, MemberListener } from './member.js';
import { isWithdrawn } from './member-withdraw.js';
import { memberKey } from './record-key.js';
import type { RecordKey, StoredRecord } from './store.js';
import type { CacheChange, Claim, WatchCache } from './watch-cache.js';

/** The writes a term makes, each conditional. @internal */
export type FailoverStore = Pick<import('./monitored-store.js').MonitoredStore, 'get' | 'create' | 'update' | 'delete'>;

/** A role's members as the registry judges them. @internal */
export interface FailoverView {
  /** Resolves once the role is listed (and its liveness ready). */
  ready(): Promise<unknown>;
  /** `added` for each present member, then each change; returns the unsubscribe function. */
  watch(listener: MemberListener): () => void;
}

/** @internal */
export interface FailoverTermOptions {
  role: string;
  token: number;
  leader: string;
  leadership: { readonly fencingToken: number | undefined };
  handler: FailoverHandler;
  includeWithdrawn: boolean;
  retentionMs: number;
  maxRetained: number;
  retryBackoff?: Omit<BackoffOptions, 'clock'>;
  store: FailoverStore;
  cache: WatchCache;
  clock: Clock;
  logger: Logger;
  view: FailoverView;
  emit<K extends keyof FailoverEvents>(type: K, event: FailoverEvents[K]): void;
  /** A later term wrote a record: end this one. */
  deposed(): void;
  /** `pending` may have changed. */
  pendingChanged(): void;
}

interface Sighting {
  incarnation: string;
  payload: JsonValue | undefined;
  leaseMs: number;
}

/**
 * One term of a failover (client-go's `OnStartedLeading(ctx)`): created when
 * this process is elected, closed when it loses, owning what only a leader
 * has — its view of the role's incarnations, its timers, its writes and the
 * signal its handlers run under. Watch events and handler outcomes only
 * enqueue a record key; one `sync(key)` reads what is known of it and does
 * what {@link decide} says. Every write is a create or a compare-and-set on
 * the version read, and reads this term's fencing token from the leadership
 * as its last step, so a deposed term writes nothing and a successor's write
 * makes a late one fail.
 * @internal
 */
export class FailoverTerm {
  private readonly controller = new AbortController();
  private readonly queue: DelayQueue<RecordKey>;
  private readonly claim: Claim;
  private readonly offs: (() => void)[] = [];
  /** Present members by id. */
  private readonly present = new Map<string, Sighting>();
  private readonly removals = new Map<RecordKey, { reason: FailoverReason; payload: JsonValue | undefined }>();
  private readonly absentSince = new Map<RecordKey, number>();
  /** Done records by when this term first saw them done, oldest first. */
  private readonly doneRecords: DoneRecords;
  private readonly running = new Set<RecordKey>();
  private readonly resolved = new Set<RecordKey>();
  private readonly claimed = new Set<RecordKey>();
  /** The claim behind each ack this term is writing: an ack that landed with its reply lost is found on the re-read and finished. */
  private readonly acking = new Map<RecordKey, Extract<FailoverState, { state: 'claimed' }>>();
  private readonly retries = new Map<RecordKey, Backoff>();
  /** What this term's own writes and re-reads returned (null: gone), until the cache shows the same version. */
  private readonly known = new Map<RecordKey, StoredRecord | null>();
  private readonly syncing = new Set<RecordKey>();
  private readonly again = new Set<RecordKey>();
  private readonly storeBackoff: Backoff;
  private startTimer: Timer | undefined;
  private ready = false;
  private closed = false;

  constructor(private readonly o: FailoverTermOptions) {
    this.queue = new DelayQueue({ clock: o.clock, run: (key) => void this.sync(key) });
    this.storeBackoff = new Backoff({ clock: o.clock, initialMs: 500, maxMs: 30_000 });
    this.doneRecords = new DoneRecords(o.maxRetained);
    this.claim = o.cache.claim(failoverPrefix(o.role));
    this.offs.push(o.cache.subscribe(failoverPrefix(o.role), (change) => this.onRecord(change)));
    this.offs.push(o.view.watch((event) => this.onMember(event)));
    this.start();
  }

  /** Incarnations this term claimed and has not acknowledged. */
  get pending(): number {
    return this.claimed.size;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.controller.abort(new Error(`the failover term ${this.o.token} of ${this.o.role} ended`));
    this.queue.close();
    this.startTimer?.cancel();
    this.offs.forEach((off) => off());
    this.claim.release();
  }

  private start(): void {
    Promise.all([this.claim.ready(), this.o.view.ready()]).then(
      () => {
        if (this.closed) return;
        this.ready = true;
        for (const entry of this.o.cache.list(failoverPrefix(this.o.role))) this.enqueue(entry.key);
        for (const [id, s] of this.present) this.enqueue(failoverKey(this.o.role, id, s.incarnation));
      },
      (err) => {
        if (this.closed) return;
        this.o.logger.warn({ err, role: this.o.role }, '[rollcall] failover cannot list its role yet; trying again');
        this.startTimer = this.storeBackoff.schedule(() => this.start());
      },
    );
  }

  private enqueue(key: RecordKey, delayMs = 0): void {
    this.queue.schedule(key, delayMs);
  }

  private onRecord(change: CacheChange): void {
    const key = change.type === 'removed' ? change.previous.key : change.entry.key;
    const known = this.known.get(key);
    const version = change.type === 'removed' ? null : change.entry.version;
    if (known !== undefined && (known === null ? version === null : known.version === version)) this.known.delete(key);
    this.enqueue(key);
  }

  private onMember(event: MemberEvent): void {
    const { role, id, payload, leaseDurationMs } = event.member;
    const before = this.present.get(id);
    if (event.type === 'removed') {
      const incarnation = incarnationOf(event.member) ?? before?.incarnation;
      if (incarnation === undefined) return this.o.logger.warn({ role, id }, '[rollcall] failover: a removed member of unknown incarnation');
      if (before?.incarnation === incarnation) this.present.delete(id);
      const key = failoverKey(role, id, incarnation);
      this.removals.set(key, { reason: event.reason === 'deleted' && this.sawWithdrawn(role, id, incarnation) ? 'withdrawn' : event.reason, payload });
      return this.enqueue(key);
    }
    const incarnation = incarnationOf(event.member) ?? this.o.cache.get(memberKey(role, id))?.stored?.created;
    if (incarnation === undefined) return;
    if (before && before.incarnation !== incarnation) {
      // An `updated` or `added` across two incarnations: the earlier one is gone.
      const old = failoverKey(role, id, before.incarnation);
      this.removals.set(old, { reason: 'replaced', payload: before.payload });
      this.enqueue(old);
    }
    this.present.set(id, { incarnation, payload, leaseMs: leaseDurationMs });
    const key = failoverKey(role, id, incarnation);
    this.removals.delete(key); // back before its mark landed: alive
    this.enqueue(key);
  }

  /**
   * Whether the view's `deleted` of this incarnation is its withdraw mark,
   * which the cache holds while the view reports it (the delete after it is
   * no event); when the watch folded the mark into the delete, the record is
   * gone, and the delete is one this leader cannot explain.
   */
  private sawWithdrawn(role: string, id: string, incarnation: string): boolean {
    const stored = this.o.cache.get(memberKey(role, id))?.stored;
    return stored !== undefined && stored.created === incarnation && isWithdrawn(stored.record);
  }

  private async sync(key: RecordKey): Promise<void> {
    if (this.closed || !this.ready) return;
    if (this.syncing.has(key)) return void this.again.add(key);
    this.syncing.add(key);
    try {
      await this.syncOnce(key);
      this.storeBackoff.reset();
    } catch (err) {
      if (this.closed || err instanceof TermEnded) return; // lost: the term is closing
      if (hasCode(err, ErrorCode.CONFLICT) || hasCode(err, ErrorCode.NOT_FOUND) || hasCode(err, ErrorCode.ALREADY_EXISTS)) {
        // Refused on the version read: read it again and decide again.
        await this.reread(key);
      } else {
        this.o.logger.warn({ err, key }, '[rollcall] failover write failed; trying again');
        this.enqueue(key, this.storeBackoff.next());
      }
    } finally {
      this.syncing.delete(key);
      if (this.again.delete(key)) this.enqueue(key);
    }
  }

  private async reread(key: RecordKey): Promise<void> {
    try {
      this.known.set(key, (await this.o.store.get(key)) ?? null);
      this.enqueue(key);
    } catch (err) {
      this.o.logger.warn({ err, key }, '[rollcall] failover cannot read a record; trying again');
      this.enqueue(key, this.storeBackoff.next());
    }
  }

  private async syncOnce(key: RecordKey): Promise<void> {
    const parsed = parseFailoverKey(this.o.role, key);
    if (!parsed) return;
    const stored = this.current(key);
    const state = stored === 'corrupt' ? 'corrupt' : stored && failoverStateOf(stored);
    const now = this.o.clock.now();
    const sighting = this.present.get(parsed.id);
    const present = sighting?.incarnation === parsed.incarnation ? sighting : undefined;
    const done = state !== undefined && state !== 'corrupt' && (state.state === 'acked' || state.state === 'skipped');
    since(this.absentSince, key, state !== undefined && state !== 'corrupt' && state.state === 'seen' && !present, now);
    this.doneRecords.note(key, done, now);
    const acking = this.acking.get(key);
    if (acking && state !== undefined && state !== 'corrupt' && state.state === 'acked' && state.token === this.o.token) this.acknowledged(key, parsed, acking);
    if (done) for (const k of this.doneRecords.excess(key)) this.enqueue(k);
    const action = decide(
      {
        record: state,
        present,
        removal: this.removals.get(key),
        absentForMs: now - (this.absentSince.get(key) ?? now),
        running: this.running.has(key),
        resolved: this.resolved.has(key),
        doneForMs: this.doneRecords.doneForMs(key, now),
        overCap: done && this.doneRecords.overCap(key),
      },
      { token: this.o.token, includeWithdrawn: this.o.includeWithdrawn, retentionMs: this.o.retentionMs },
    );
    await this.act(key, parsed, action, stored === 'corrupt' ? undefined : stored, state === 'corrupt' ? undefined : state);
  }

  private async act(key: RecordKey, dead: { id: string; incarnation: string }, action: FailoverAction, stored: StoredRecord | undefined, state: FailoverState | undefined): Promise<void> {
    const { role, token } = this.o;
    switch (action.do) {
      case 'nothing':
        return;
      case 'wait':
        return this.enqueue(key, action.ms);
      case 'note': {
        const s = this.present.get(dead.id)!;
        return this.write(key, { state: 'seen', lastPayload: s.payload, leaseMs: s.leaseMs }, undefined);
      }
      case 'claim': {
        const claims = (state?.state === 'claimed' ? state.claims : 0) + 1;
        await this.write(key, { state: 'claimed', token, reason: action.reason, lastPayload: action.lastPayload, claims }, stored);
        this.claimed.add(key);
        this.o.pendingChanged();
        return this.enqueue(key);
      }
      case 'run':
        return this.run(key, { role, ...dead, lastPayload: state?.state === 'claimed' ? state.lastPayload : undefined, reason: state?.state === 'claimed' ? state.reason : 'unseen' }, action.resumed);
      case 'ack': {
        const claim = state as Extract<FailoverState, { state: 'claimed' }>;
        this.acking.set(key, claim);
        await this.write(key, { state: 'acked', token, reason: claim.reason, claims: claim.claims }, stored);
        this.acknowledged(key, dead, claim);
        return this.enqueue(key);
      }
      case 'skip': {
        const lastPayload = this.removalPayload(key, state);
        await this.write(key, { state: 'skipped', token, reason: action.reason }, stored);
        this.removals.delete(key);
        this.o.emit('skipped', { role, ...dead, lastPayload, reason: action.reason, fencingToken: token });
        return this.enqueue(key);
      }
      case 'forget':
        if (!stored) return;
        if (!this.valid()) return;
        await this.o.store.delete(key, stored.version);
        this.known.set(key, null);
        this.doneRecords.forget(key);
        return;
      case 'deposed':
        this.o.logger.warn({ key, token }, '[rollcall] a later failover term wrote this record: this term is over');
        this.claimed.delete(key);
        this.o.pendingChanged();
        return this.o.deposed();
    }
  }

  /** This term's ack of `key` landed: nothing of it is left to run or retry. */
  private acknowledged(key: RecordKey, dead: { id: string; incarnation: string }, claim: Extract<FailoverState, { state: 'claimed' }>): void {
    this.acking.delete(key);
    this.resolved.delete(key);
    this.claimed.delete(key);
    this.retries.delete(key);
    this.removals.delete(key);
    this.o.pendingChanged();
    this.o.emit('acknowledged', { role: this.o.role, ...dead, lastPayload: claim.lastPayload, reason: claim.reason, fencingToken: this.o.token });
  }

  /** Creates (no version) or compare-and-sets `key` to `state`, reading this term's validity as the last step. */
  private async write(key: RecordKey, state: FailoverState, stored: StoredRecord | undefined): Promise<void> {
    const record: LeaseRecord = failoverRecord(state, this.o.leader, this.o.token, this.o.clock.wallNow());
    if (!this.valid()) throw new TermEnded();
    const written = stored ? await this.o.store.update(key, record, stored.version) : await this.o.store.create(key, record);
    this.known.set(key, written);
  }

  private valid(): boolean {
    return !this.closed && this.o.leadership.fencingToken === this.o.token;
  }

  private run(key: RecordKey, dead: DeadIncarnation, resumed: boolean): void {
    let retry = this.retries.get(key);
    if (!retry) this.retries.set(key, (retry = new Backoff({ initialMs: 1000, maxMs: 60_000, ...this.o.retryBackoff, clock: this.o.clock })));
    const attempt = retry.failures + 1;
    const fencingToken = this.o.token;
    this.running.add(key);
    this.o.emit('started', { ...dead, fencingToken, resumed, attempt });
    Promise.resolve()
      .then(() => this.o.handler(dead, { fencingToken, signal: this.controller.signal, resumed, attempt }))
      .then(
        () => {
          this.running.delete(key);
          if (this.closed) return; // the term ended first: not acknowledged, resumed by the next
          this.resolved.add(key);
          this.enqueue(key);
        },
        (error: unknown) => {
          this.running.delete(key);
          if (this.closed) return;
          const retryInMs = retry.next();
          this.o.emit('failed', { ...dead, fencingToken, error, attempt, retryInMs });
          this.enqueue(key, retryInMs);
        },
      );
  }

  /** What is known of `key` now: this term's last write or read, else the cache's. */
  private current(key: RecordKey): StoredRecord | 'corrupt' | undefined {
    const known = this.known.get(key);
    if (known !== undefined) return known ?? undefined;
    const entry = this.o.cache.get(key);
    if (!entry) return undefined;
    return entry.stored ?? 'corrupt';
  }

  private removalPayload(key: RecordKey, state: FailoverState | undefined): JsonValue | undefined {
    return this.removals.get(key)?.payload ?? (state?.state === 'seen' ? state.lastPayload : undefined);
  }
}

/** A write this term may no longer make: it ends quietly. */
class TermEnded extends Error {}

/** Keeps `map[key]` at the first time `holds` was seen true, and drops it once false. */
function since(map: Map<RecordKey, number>, key: RecordKey, holds: boolean, now: number): void {
  if (!holds) map.delete(key);
  else if (!map.has(key)) map.set(key, now);
}

/** A member's incarnation where its event carries one (`Member.incarnation`, once members have it). */
function incarnationOf(member: object): string | undefined {
  const incarnation = (member as { incarnation?: unknown }).incarnation;
  return typeof incarnation === 'string' ? incarnation : undefined;
}
