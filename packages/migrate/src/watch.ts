import { ErrorCode, RevisionTooOldError, type Clock, type RegistryError, type Timer } from '@rollcall/core';
import { type RecordKey, type RecordStore, type ScopeOptions, type WatchEvent, type WatchListener, type WatchSubscription } from '@rollcall/core/spi';
import { mergedVersion, mergeValues, parseMigrateVersion, type MergedValue, type Side, type SideVersions } from './merge.js';
import { applyStep, type ViewState, type HistoryLine, type ViewStep, type ViewHistory } from './view-history.js';

/** A write of this store in flight on a key, and the side versions it produced. */
interface Hold {
  open: number;
  expects: Partial<SideVersions>[];
  seen: Record<Side, Set<string | null>>;
  timer: Timer | undefined;
}

/** @internal */
export interface MigrateWatchOptions {
  from: RecordStore;
  to: RecordStore;
  prefix: string;
  /** What the watch is for, passed on to each side's watch. */
  scope: ScopeOptions | undefined;
  /** The state the watch starts from (its own copy). */
  state: ViewState;
  /** What a watch that passed this point before emitted after it: a resumed watch emits the same changes. */
  planned: { key: RecordKey; value: MergedValue | undefined }[];
  history: ViewHistory;
  listener: WatchListener;
  clock: Clock;
  /** Longest a change of a key this store is writing waits for the write's other side to show. Milliseconds. */
  holdMs: number;
  onClose: () => void;
}

/**
 * A watch of the merged view: a watch on each side, every side event merged
 * with the other side's record of the key. A change this store writes to both
 * sides is held until both sides' events are in, so its own write shows as
 * one change, with the version the write returned. A side's watch ending ends
 * this one (REVISION_TOO_OLD on either side: the caller relists both).
 * @internal
 */
export class MigrateWatch implements WatchSubscription {
  private closed = false;
  private readonly established: Record<Side, boolean> = { from: false, to: false };
  /** A side has shown a change, progress past the revision it started from, or synced progress: its revision was still kept. */
  private readonly proven: Record<Side, boolean> = { from: false, to: false };
  private readonly startedAt: Record<Side, string>;
  private readonly holds = new Map<RecordKey, Hold>();
  private readonly subscriptions: WatchSubscription[] = [];
  private readonly line: HistoryLine;
  private readonly state: ViewState;
  private readonly plans = new Map<RecordKey, (MergedValue | undefined)[]>();
  /** What waits until both sides' watches have shown they run (see {@link start}); undefined once delivered. */
  private early: WatchEvent[] | undefined = [];
  private earlyTimer: Timer | undefined;

  constructor(private readonly options: MigrateWatchOptions) {
    this.state = options.state;
    this.startedAt = { from: options.state.fromRevision, to: options.state.toRevision };
    for (const { key, value } of options.planned) {
      const queue = this.plans.get(key);
      if (queue) queue.push(value);
      else this.plans.set(key, [value]);
    }
    this.line = options.history.start(options.prefix, options.state).line;
    // Events reach the listener after watch() returned, as from any store.
    queueMicrotask(() => this.start());
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const subscription of this.subscriptions.splice(0)) subscription.close();
    for (const hold of this.holds.values()) hold.timer?.cancel();
    this.holds.clear();
    this.earlyTimer?.cancel();
    this.options.onClose();
  }

  /** This store starts writing `key`: its merged change waits for the write to settle. */
  writeStarted(key: RecordKey): void {
    if (this.closed || !key.startsWith(this.options.prefix)) return;
    this.holdOf(key).open++;
  }

  /** The write settled; `expect` holds the versions it wrote on each side (none when it failed). */
  writeSettled(key: RecordKey, expect: Partial<SideVersions> | undefined): void {
    const hold = this.holds.get(key);
    if (this.closed || !hold) return;
    hold.open--;
    if (expect) hold.expects.push(expect);
    if (this.tryRelease(key, hold) || hold.open > 0 || hold.timer) return;
    // A side whose watch skips versions may never show the one written: the change is not held past this.
    hold.timer = this.options.clock.setTimeout(() => this.release(key), this.options.holdMs);
  }

  private holdOf(key: RecordKey): Hold {
    let hold = this.holds.get(key);
    if (!hold) this.holds.set(key, (hold = { open: 0, expects: [], seen: { from: new Set(), to: new Set() }, timer: undefined }));
    return hold;
  }

  /**
   * Opens both sides' watches. Nothing reaches the listener until both have
   * shown a change, progress past their start revision or synced progress (a
   * side whose revision is too old fails first — etcd after announcing the
   * watch at its start revision — and then the listener gets only the error,
   * as from one store) or `holdMs` has passed (a side with nothing to tell
   * that never says it is synced). A held view is blind without knowing it:
   * a candidate could judge a lease expired in it and write with one side's
   * version stale, which only the second side refuses.
   */
  private start(): void {
    if (this.closed) return;
    this.earlyTimer = this.options.clock.setTimeout(() => this.deliverEarly(), this.options.holdMs);
    for (const key of new Set([...this.state.from.keys(), ...this.state.to.keys(), ...this.state.emitted.keys(), ...this.plans.keys()])) {
      // A resumed view follows what was emitted after its revision; what a write then held back and never emitted shows now.
      if (this.plans.has(key)) this.nextPlan(key);
      else this.emitIfChanged(key);
    }
    const { from, to, prefix, scope } = this.options;
    for (const [side, store, revision] of [['from', from, this.state.fromRevision], ['to', to, this.state.toRevision]] as const) {
      if (this.closed) return;
      this.subscriptions.push(
        store.watch(prefix, revision, {
          event: (event) => this.onSideEvent(side, event),
          error: (error) => this.onSideError(error),
        }, scope),
      );
    }
  }

  private record(step: ViewStep): string {
    applyStep(this.state, step);
    this.options.history.touch(this.line);
    return this.line.append(step);
  }

  private onSideEvent(side: Side, event: WatchEvent): void {
    if (this.closed) return;
    const revision = this.record({ kind: 'side', side, event });
    this.established[side] = true;
    if (event.type !== 'progress' || event.revision !== this.startedAt[side] || event.synced) this.proven[side] = true;
    if (event.type === 'progress' && this.established.from && this.established.to) this.deliver({ type: 'progress', revision });
    if (this.proven.from && this.proven.to) this.deliverEarly();
    if (event.type === 'progress') return;
    const key = event.type === 'put' ? event.record.key : event.type === 'corrupt' ? event.entry.key : event.key;
    const hold = this.holds.get(key);
    if (!hold) return this.emitIfChanged(key);
    hold.seen[side].add(event.type === 'delete' ? null : event.type === 'put' ? event.record.version : event.entry.version);
    this.tryRelease(key, hold);
  }

  private onSideError(error: RegistryError): void {
    if (this.closed) return;
    const listener = this.options.listener;
    this.close();
    listener.error(error.code === ErrorCode.REVISION_TOO_OLD ? new RevisionTooOldError(`a side's watch is too old: ${error.message}`, { backend: 'migrate', cause: error }) : error);
  }

  /** Releases a hold whose write settled and whose written versions both sides have shown; returns whether it did. */
  private tryRelease(key: RecordKey, hold: Hold): boolean {
    if (hold.open > 0) return false;
    const shown = (side: Side, version: string | null | undefined) => version === undefined || hold.seen[side].has(version);
    if (!hold.expects.every((e) => shown('from', e.from) && shown('to', e.to))) return false;
    this.release(key);
    return true;
  }

  private release(key: RecordKey): void {
    const hold = this.holds.get(key);
    if (this.closed || !hold) return;
    hold.timer?.cancel();
    this.holds.delete(key);
    this.emitIfChanged(key);
    this.nextPlan(key);
  }

  /** Holds `key` until both sides show the next change emitted before at this point (bounded like a write's hold). */
  private nextPlan(key: RecordKey): void {
    const queue = this.plans.get(key);
    while (queue?.length && !this.holds.has(key)) {
      const value = queue.shift();
      const want = value ? parseMigrateVersion(key, mergedVersion(value)!) : { from: null, to: null };
      const expect: Partial<SideVersions> = {};
      for (const side of ['from', 'to'] as const) if ((this.state[side].get(key)?.version ?? null) !== want[side]) expect[side] = want[side];
      if (Object.keys(expect).length === 0) {
        this.emitIfChanged(key);
        continue;
      }
      const hold = this.holdOf(key);
      hold.expects.push(expect);
      hold.timer = this.options.clock.setTimeout(() => this.release(key), this.options.holdMs);
    }
    if (queue?.length === 0) this.plans.delete(key);
  }

  private emitIfChanged(key: RecordKey): void {
    const merged = mergeValues(key, this.state.from.get(key), this.state.to.get(key), this.state.emitted.get(key));
    if (mergedVersion(merged) === mergedVersion(this.state.emitted.get(key))) return;
    const revision = this.record({ kind: 'emit', key, value: merged });
    if (!merged) this.deliver({ type: 'delete', key, revision });
    else if (merged.stored) this.deliver({ type: 'put', record: merged.stored, revision });
    else this.deliver({ type: 'corrupt', entry: merged.corrupt, revision });
  }

  private deliver(event: WatchEvent): void {
    if (this.early) this.early.push(event);
    else this.options.listener.event(event);
  }

  private deliverEarly(): void {
    const early = this.early;
    if (!early || this.closed) return;
    this.early = undefined;
    this.earlyTimer?.cancel();
    for (const event of early) {
      if (this.closed) return;
      this.options.listener.event(event);
    }
  }
}
