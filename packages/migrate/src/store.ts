import { ErrorCode, hasCode, RevisionTooOldError, StoreConflictError, systemClock, type Clock } from '@rollcall/core';
import { supports } from '@rollcall/core/admin';
import {
  type LeaseRecord,
  type RecordKey,
  type RecordList,
  type RecordStore,
  type ScopeOptions,
  type StoredRecord,
  type StoreSessionState,
  type StoreSupports,
  type WatchListener,
  type WatchSubscription,
} from '@rollcall/core/spi';
import { mergeRecords, mergeValues, migrateCreated, migrateVersion, parseMigrateVersion, type SideValue, type SideVersions } from './merge.js';
import { MigrateWatch } from './watch.js';
import { ViewHistory, type ViewState } from './view-history.js';

/** What {@link MigrateStore} takes besides its two sides. */
export interface MigrateStoreOptions {
  /** Default: the system clock. */
  clock?: Clock;
  /**
   * Longest a watch holds back a change this store is writing on both sides,
   * waiting for the second side's event, before it shows what it has.
   * Milliseconds. Default 2000.
   */
  holdMs?: number;
}

const SESSION_ORDER: readonly StoreSessionState[] = ['connected', 'suspended', 'lost'];

/**
 * `record` as `to`'s copy of the life `from` holds: tagged with `from`'s
 * creation (`LeaseRecord.createdAs`), so a reader that sees `to`'s copy first
 * names the same incarnation as one that sees `from`'s.
 */
function continuing(record: LeaseRecord, from: StoredRecord): LeaseRecord {
  return { ...record, createdAs: `from:${from.created}` };
}

/**
 * `registry.type=migrate`: one record store over two, the way client-go's
 * MultiLock moved Kubernetes' controllers from Endpoints to Leases. Every write
 * goes to `from`, then to `to`, each a compare-and-set on the version seen on
 * that side (the composite version names both), so it succeeds only where it
 * would have succeeded on each side alone: a holder that wins here holds both.
 * Reads and watches merge the two by key ({@link mergeRecords}): the higher
 * fencing token of the two, the newer member record, and an unknown holder
 * while the sides disagree, so the one lease algorithm of core runs unchanged.
 */
export class MigrateStore implements RecordStore {
  readonly spiVersion = 1 as const;
  readonly backend = 'migrate';
  readonly maxPayloadBytes: number;
  /** What either side has: a hold check asks each side that has one, a session is the worse of the sides' (see {@link watchSessions}). */
  readonly supports: StoreSupports;
  readonly onSessionState?: (listener: (state: StoreSessionState) => void) => () => void;
  readonly assertCanHold?: (key: RecordKey) => Promise<void>;
  private readonly history = new ViewHistory();
  private readonly watches = new Set<MigrateWatch>();
  private readonly clock: Clock;
  private readonly holdMs: number;
  /** The last call to `to` found it unreachable: a write asks it first, before writing `from` (see {@link writeBoth}). */
  private toUnreachable = false;

  constructor(
    /** The backend being left: written first. */
    readonly from: RecordStore,
    /** The backend being moved to: written second. */
    readonly to: RecordStore,
    options: MigrateStoreOptions = {},
  ) {
    this.maxPayloadBytes = Math.min(from.maxPayloadBytes, to.maxPayloadBytes);
    this.clock = options.clock ?? systemClock;
    this.holdMs = options.holdMs ?? 2000;
    const sessionState = supports(from, 'sessionState') || supports(to, 'sessionState');
    const holdCheck = supports(from, 'holdCheck') || supports(to, 'holdCheck');
    this.supports = { sessionState, holdCheck };
    if (sessionState) this.onSessionState = (listener) => this.watchSessions(listener);
    if (holdCheck) this.assertCanHold = (key) => this.assertBothCanHold(key);
  }

  async get(key: RecordKey): Promise<StoredRecord | undefined> {
    const [from, to] = await Promise.all([this.from.get(key), this.to.get(key)]);
    return mergeValues(key, from, to)?.stored;
  }

  create(key: RecordKey, record: LeaseRecord): Promise<StoredRecord> {
    return this.writeBoth(key, () => this.from.create(key, record), (from) => this.to.create(key, continuing(record, from)));
  }

  update(key: RecordKey, record: LeaseRecord, version: string): Promise<StoredRecord> {
    const seen = parseMigrateVersion(key, version);
    return this.writeBoth(
      key,
      () => this.writeSide(this.from, key, record, seen.from),
      (from) => this.writeSide(this.to, key, continuing(record, from), seen.to),
    );
  }

  delete(key: RecordKey, version: string): Promise<void> {
    const seen = parseMigrateVersion(key, version);
    return this.write(key, async () => {
      const expect: Partial<SideVersions> = {};
      for (const side of ['from', 'to'] as const) {
        const sideVersion = seen[side];
        if (sideVersion === null) continue;
        try {
          await this[side].delete(key, sideVersion);
          expect[side] = null;
        } catch (err) {
          if (!hasCode(err, ErrorCode.NOT_FOUND)) throw err; // a CONFLICT on `from` leaves `to` untouched
        }
      }
      if (Object.keys(expect).length === 0) throw new StoreConflictError('NOT_FOUND', `${key} is on neither side`, { backend: this.backend });
      return { written: undefined, expect };
    });
  }

  async list(prefix: string, options?: ScopeOptions): Promise<RecordList> {
    const [from, to] = await Promise.all([this.from.list(prefix, options), this.to.list(prefix, options)]);
    const side = (list: RecordList) => new Map<RecordKey, SideValue>([...list.records.map((r) => [r.key, r] as const), ...list.corrupt.map((c) => [c.key, c] as const)]);
    const state: ViewState = { from: side(from), to: side(to), fromRevision: from.revision, toRevision: to.revision, emitted: new Map() };
    const records: StoredRecord[] = [];
    const corrupt: RecordList['corrupt'] = [];
    for (const key of new Set([...state.from.keys(), ...state.to.keys()])) {
      const merged = mergeValues(key, state.from.get(key), state.to.get(key))!;
      state.emitted.set(key, merged);
      if (merged.stored) records.push(merged.stored);
      else corrupt.push(merged.corrupt);
    }
    return { records, corrupt, revision: this.history.start(prefix, state).revision };
  }

  watch(prefix: string, fromRevision: string, listener: WatchListener, options?: ScopeOptions): WatchSubscription {
    const resumed = this.history.resumeAt(fromRevision, prefix);
    if (!resumed) {
      let closed = false;
      queueMicrotask(() => closed || listener.error(new RevisionTooOldError(`revision ${fromRevision} is no longer kept by this migrate store`, { backend: this.backend })));
      return { close: () => void (closed = true) };
    }
    const watch: MigrateWatch = new MigrateWatch({
      from: this.from,
      to: this.to,
      prefix,
      scope: options,
      state: resumed.state,
      planned: resumed.planned,
      history: this.history,
      listener,
      clock: this.clock,
      holdMs: this.holdMs,
      onClose: () => this.watches.delete(watch),
    });
    this.watches.add(watch);
    return watch;
  }

  private async assertBothCanHold(key: RecordKey): Promise<void> {
    if (supports(this.from, 'holdCheck')) await this.from.assertCanHold!(key);
    if (supports(this.to, 'holdCheck')) await this.to.assertCanHold!(key);
  }

  async close(): Promise<void> {
    for (const watch of [...this.watches]) watch.close();
    const results = await Promise.allSettled([this.from.close(), this.to.close()]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * `from`, then `to`. While `to` is unreachable, a write first asks `to`
   * whether it answers again and writes nothing when it does not: a process cut
   * off from `to` must not keep renewing its half on `from`, which would look
   * alive there and keep every other process from taking over.
   */
  private writeBoth(key: RecordKey, writeFrom: () => Promise<StoredRecord>, writeTo: (from: StoredRecord) => Promise<StoredRecord>): Promise<StoredRecord> {
    return this.write(key, async () => {
      if (this.toUnreachable) {
        try {
          await this.onTo(() => this.to.get(key));
        } catch (err) {
          if (hasCode(err, ErrorCode.UNAVAILABLE)) throw err; // a refusal (a corrupt record) is an answer
        }
      }
      const from = await writeFrom();
      const to = await this.onTo(() => writeTo(from));
      return { written: { key, version: migrateVersion(from.version, to.version), record: mergeRecords(from.record, to.record), created: migrateCreated(from, to)! }, expect: { from: from.version, to: to.version } };
    });
  }

  /** A call to `to`, noting whether it answered. */
  private async onTo<T>(call: () => Promise<T>): Promise<T> {
    try {
      const result = await call();
      this.toUnreachable = false;
      return result;
    } catch (err) {
      this.toUnreachable = hasCode(err, ErrorCode.UNAVAILABLE);
      throw err;
    }
  }

  /** Writes one side: a compare-and-set on the version seen there, or a create where that side had nothing. */
  private async writeSide(store: RecordStore, key: RecordKey, record: LeaseRecord, version: string | null): Promise<StoredRecord> {
    if (version !== null) return store.update(key, record, version);
    try {
      return await store.create(key, record);
    } catch (err) {
      // Absent when read, present now: someone wrote it meanwhile.
      if (hasCode(err, ErrorCode.ALREADY_EXISTS)) throw new StoreConflictError('CONFLICT', `${key} appeared on ${store.backend} since it was read`, { backend: this.backend, cause: err });
      throw err;
    }
  }

  /** Runs a two-sided write, telling open watches so they show it as one change. */
  private async write<T>(key: RecordKey, run: () => Promise<{ written: T; expect: Partial<SideVersions> }>): Promise<T> {
    const watches = [...this.watches];
    for (const watch of watches) watch.writeStarted(key);
    let expect: Partial<SideVersions> | undefined;
    try {
      const result = await run();
      expect = result.expect;
      return result.written;
    } finally {
      for (const watch of watches) watch.writeSettled(key, expect);
    }
  }

  /** The worse of the two sides' sessions: a migrating process has lost what it holds when either side has. */
  private watchSessions(listener: (state: StoreSessionState) => void): () => void {
    const states = { from: 'connected', to: 'connected' } as Record<'from' | 'to', StoreSessionState>;
    let reported: StoreSessionState = 'connected';
    const report = () => {
      const worst = SESSION_ORDER[Math.max(SESSION_ORDER.indexOf(states.from), SESSION_ORDER.indexOf(states.to))]!;
      if (worst === reported) return;
      reported = worst;
      listener(worst);
    };
    const offs = (['from', 'to'] as const).map((side) => (supports(this[side], 'sessionState') ? this[side].onSessionState!((state) => ((states[side] = state), report())) : undefined));
    return () => offs.forEach((off) => off?.());
  }
}
