import type { Clock } from './clock.js';
import { judgeExpiry, type Expiry } from './expiry.js';
import { parseTime, type LeaseRecord } from './lease-record.js';
import { isMarked, LivenessJudge, type ConfirmPolicy } from './liveness-judge.js';
import type { Logger } from './logger.js';
import { podUidOf, type LivenessStrategy, type Verdict } from './member-liveness.js';
import type { Member, MemberEvent, MemberListener, MemberRemovalReason } from './member.js';
import { isWithdrawn } from './member-withdraw.js';
import type { MonitoredStore } from './monitored-store.js';
import type { PodRecords } from './pod-liveness.js';
import { MEMBER_PREFIX, parseKey } from './record-key.js';
import { ScopeClaims } from './scope-claims.js';
import type { RecordKey } from './store.js';
import { scopeCovers } from './scope-watch.js';
import type { CacheChange, CacheEntry, WatchCache } from './watch-cache.js';

/** A record this process judges: a present member, or (`member` undefined) a mark whose marker has not deleted it yet. */
interface Judged {
  member: Member | undefined;
  entry: CacheEntry;
  leaseMs: number;
  /** This process judges its lease (verdict `lease`). */
  byLease: boolean;
}

/** @internal */
export interface MemberDirectoryOptions {
  cache: WatchCache;
  store: MonitoredStore;
  clock: Clock;
  logger: Logger;
  /** Delay before confirming an expiry again after the backend could not say. Milliseconds. */
  retryMs: number;
  /** The registry's liveness mode: how a record that is not a pod member's is judged, and its members' last heartbeat. */
  liveness: Pick<LivenessStrategy, 'verdict' | 'lastHeartbeat'>;
  /** How a pod member's record is judged, whatever the mode: by its pod. */
  pods: Pick<PodRecords, 'verdict'>;
  /** How an expiry is confirmed: a mark and delete, or (`registry.readOnly`) a read. */
  confirm: ConfirmPolicy;
}

/** How many keys' mark-ended incarnations a directory remembers (the oldest forgotten first). */
const MAX_ENDED_REMEMBERED = 10_000;

/**
 * The members of every role this process reads, derived from the shared
 * cache: a role enters the cache when first listed or watched (`watch`) and
 * stays until the registry closes. A member is present while its record exists
 * and the liveness its record declares vouches for it: a pod member's pod is
 * Ready ({@link PodRecords}), any other as the mode says ({@link LivenessStrategy.verdict}).
 *
 * A record whose verdict is `lease` (the `heartbeat` mode, a member outside a
 * pod) is present while it has changed within its lease by this process's
 * clock, judged by the one judge ({@link LivenessJudge}) on the one rule
 * ({@link judgeExpiry}). An expired record is confirmed by the confirm
 * policy: marked by compare-and-set and deleted by the one reader whose mark
 * lands, so a member that renewed meanwhile keeps its record (and comes back
 * as added), a crashed member costs one delete, and a mark whose marker died
 * before deleting expires a lease later and is marked again; or, in a registry
 * that writes nothing, read unchanged. A mark, and a member no longer vouched
 * for, is reported as `removed` with reason `expired`; a withdraw mark (its
 * member's last write before deleting it, {@link isWithdrawn}) as `removed`
 * with reason `deleted`, at once, so a failover reading the cache then knows
 * the delete is a withdraw.
 *
 * A member is one incarnation ({@link Member.incarnation}: its record's
 * creation). A record under its key with another creation than the one last
 * reported — its deletion coalesced in a watch or a relist — ends it first:
 * `removed` (`replaced`, or `expired` when it had run out by the rule here),
 * then `added` for the new one; `updated` only ever joins two states of one
 * record's life. A mark is an update, so `removed … expired` names the
 * incarnation that died.
 * @internal
 */
export class MemberDirectory {
  private readonly judged = new Map<RecordKey, Judged>();
  /** Per key, the incarnation a mark (withdraw or expiry) ended, also after its record went: a mark is final for its incarnation. Oldest first, bounded. */
  private readonly endedByMark = new Map<RecordKey, string>();
  private readonly listeners = new Set<{ role: string | undefined; listener: MemberListener }>();
  private readonly unsubscribe: () => void;
  private readonly offLive: () => void;
  private readonly judge: LivenessJudge;
  /** The cache's holds, by scope: `member/<role>/`, or `member/` for every role. */
  private readonly claims: ScopeClaims;
  private readonly cache: WatchCache;

  constructor(private readonly options: MemberDirectoryOptions) {
    const { cache, clock, logger, retryMs } = options;
    this.cache = cache;
    this.judge = new LivenessJudge({ clock, logger, retryMs });
    this.claims = new ScopeClaims(cache);
    for (const entry of cache.list(MEMBER_PREFIX)) this.onChange({ type: 'added', entry });
    this.unsubscribe = cache.subscribe(MEMBER_PREFIX, (change) => this.onChange(change));
    // Time this process spent blind does not count against anyone: judged again once the watch is back.
    this.offLive = cache.onLive((scope) => this.judge.rearm((key) => scopeCovers(scope, key)));
  }

  /** The roles in the cache: those claimed one by one, and with every role claimed, each that has a member. Sorted. */
  watchedRoles(): string[] {
    const scopes = this.claims.scopes();
    const named = scopes.filter((s) => s !== MEMBER_PREFIX).map((s) => s.slice(MEMBER_PREFIX.length, -1));
    return [...new Set([...named, ...(this.claims.has(MEMBER_PREFIX) ? this.roles() : [])])].sort();
  }

  /**
   * Keeps `role`'s members (every role's when undefined) in the cache from now
   * on; resolves once they are listed, rejects if that list failed (the cache
   * keeps trying).
   */
  watch(role: string | undefined): Promise<void> {
    return this.claims.ready(role === undefined ? MEMBER_PREFIX : `${MEMBER_PREFIX}${role}/`);
  }

  /** Present members of `role`, sorted by id. */
  members(role: string): Member[] {
    return this.presentMembers().filter((m) => m.role === role).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Roles with at least one present member, sorted. */
  roles(): string[] {
    return [...new Set(this.presentMembers().map((m) => m.role))].sort();
  }

  /** Calls `listener` for each change of `role` (every role when undefined); returns the unsubscribe function. */
  subscribe(role: string | undefined, listener: MemberListener): () => void {
    const item = { role, listener };
    this.listeners.add(item);
    return () => this.listeners.delete(item);
  }

  /** Judges `key`'s record again as the cache has it: the word of its liveness on it changed without the record changing. */
  rejudge(key: RecordKey): void {
    const entry = this.cache.get(key);
    if (entry) this.onChange({ type: 'added', entry });
  }

  close(): void {
    this.claims.release();
    this.unsubscribe();
    this.offLive();
    this.judge.close();
    this.judged.clear();
  }

  private presentMembers(): Member[] {
    return [...this.judged.values()].flatMap((j) => (j.member ? [j.member] : []));
  }

  private onChange(change: CacheChange): void {
    if (change.type === 'removed') {
      // Gone after its lease ran out is an expiry whoever deleted it (a mark this watch did not see: coalesced, or made before it listed).
      const expired = this.judge.confirming(change.previous.key) || this.ranOut(change.previous.key);
      this.drop(change.previous.key, expired ? 'expired' : 'deleted');
      this.forget(change.previous.key);
      return;
    }
    const entry = change.entry;
    const parsed = parseKey(entry.key);
    if (!parsed || parsed.kind !== 'member') return;
    if (!entry.stored) {
      this.options.logger.warn({ key: entry.key }, '[rollcall] member record is corrupt; treating the member as gone');
      this.drop(entry.key, 'corrupt');
      this.forget(entry.key);
      return;
    }
    const record = entry.stored.record;
    const marked = isMarked(record) || isWithdrawn(record);
    // An unmarked version of an incarnation already ended by a mark is an older view of it (a migrate's other side, a
    // relist racing the mark), never its return: no member unmarks its own record.
    const ended = this.endedByMark.get(entry.key);
    if (ended !== undefined && ended !== entry.stored.created) this.endedByMark.delete(entry.key);
    else if (ended !== undefined && !marked) return;
    const leaseMs = record.leaseDurationSeconds * 1000;
    // An updated never spans two incarnations: a record created again under the key (its deletion coalesced away) ends the one it replaced.
    const tracked = this.judged.get(entry.key)?.entry.stored?.created;
    if (tracked !== undefined && tracked !== entry.stored.created) {
      this.drop(entry.key, this.judge.confirming(entry.key) || this.ranOut(entry.key) ? 'expired' : 'replaced');
      this.forget(entry.key);
    }
    const verdict = this.verdict(entry);
    if (marked) {
      this.endedByMark.delete(entry.key);
      this.endedByMark.set(entry.key, entry.stored.created);
      // a stale view comes soon after the mark: the oldest entries go first once there are many keys
      if (this.endedByMark.size > MAX_ENDED_REMEMBERED) this.endedByMark.delete(this.endedByMark.keys().next().value!);
    }
    if (marked || verdict === 'absent') {
      // A mark keeps the record's last payload: one this view did not hear written (folded into the mark by a relist) is
      // told before the removal, so `removed` carries the last data.
      if (marked) this.catchUpPayload(entry.key, record);
      // A withdraw mark (seen before the delete it precedes) is a graceful withdraw: `deleted`, as that delete would say.
      this.drop(entry.key, isWithdrawn(record) ? 'deleted' : 'expired');
      // A mark its marker has not deleted: judged like a member, so it goes even if that marker died.
      if (marked && verdict === 'lease') this.track({ member: undefined, entry, leaseMs, byLease: true });
      else this.forget(entry.key);
      return;
    }
    const member: Member = {
      role: parsed.role!,
      id: parsed.id!,
      payload: record.payload,
      acquireTime: parseTime(record.acquireTime),
      renewTime: this.options.liveness.lastHeartbeat?.(parsed.role!, parsed.id!) ?? parseTime(record.renewTime),
      leaseDurationMs: leaseMs,
      incarnation: entry.stored.created,
      ...(podUidOf(entry) === undefined ? {} : { judgedBy: verdict === 'unverified' ? ('unverified' as const) : ('pod' as const) }),
    };
    const previous = this.judged.get(entry.key)?.member;
    this.track({ member, entry, leaseMs, byLease: verdict === 'lease' });
    if (!previous) this.emit({ type: 'added', member });
    else if (JSON.stringify(previous.payload) !== JSON.stringify(member.payload)) this.emit({ type: 'updated', member, previous });
  }

  /** A record declares its liveness: a pod member's is judged by its pod whatever this process's mode, any other as the mode says. */
  private verdict(entry: CacheEntry): Verdict {
    return podUidOf(entry) !== undefined ? this.options.pods.verdict(entry) : this.options.liveness.verdict(entry);
  }

  private track(judged: Judged): void {
    const key = judged.entry.key;
    this.judged.set(key, judged);
    if (!judged.byLease) return this.judge.forget(key);
    this.judge.track(key, {
      expiry: () => this.expiry(judged),
      confirm: () => this.options.confirm(this.options.store, key, judged.entry.stored!, this.options.clock.wallNow()),
      // Confirmed: its record was marked or deleted (the watch brings that), or read unchanged; judged again only when it changes.
      expired: () => {
        this.judge.forget(key);
        if (this.judged.get(key) === judged) this.drop(key, 'expired');
      },
    });
  }

  private forget(key: RecordKey): void {
    this.judge.forget(key);
    this.judged.delete(key);
  }

  /** Whether `key`'s member, judged by its lease, had run out by the one rule when its record went (a mark this watch did not see). */
  private ranOut(key: RecordKey): boolean {
    const judged = this.judged.get(key);
    return judged?.member !== undefined && judged.byLease && this.expiry(judged).dueAt <= this.options.clock.now();
  }

  private expiry(judged: Judged): Expiry {
    return judgeExpiry(judged.leaseMs, [judged.entry.observedAt], [this.cache.sight(judged.entry.key)], this.options.clock.now());
  }

  /** An `updated` for a held member whose marked record carries a payload this view never showed (same incarnation: a replaced one was dropped first). */
  private catchUpPayload(key: RecordKey, record: LeaseRecord): void {
    const judged = this.judged.get(key);
    if (!judged?.member || JSON.stringify(judged.member.payload) === JSON.stringify(record.payload)) return;
    const member = { ...judged.member, payload: record.payload };
    this.judged.set(key, { ...judged, member });
    this.emit({ type: 'updated', member, previous: judged.member });
  }

  private drop(key: RecordKey, reason: MemberRemovalReason): void {
    const judged = this.judged.get(key);
    if (!judged?.member) return;
    this.judge.forget(key);
    this.judged.delete(key);
    this.emit({ type: 'removed', member: judged.member, reason });
  }

  private emit(event: MemberEvent): void {
    for (const { role, listener } of [...this.listeners]) {
      if (role !== undefined && role !== event.member.role) continue;
      try {
        listener(event);
      } catch (err) {
        this.options.logger.error({ err }, '[rollcall] a member listener threw');
      }
    }
  }
}
