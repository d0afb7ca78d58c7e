import type { Clock, Timer } from './clock.js';
import { ErrorCode, hasCode } from './errors.js';
import { confirmByRead, judgeExpiry } from './expiry.js';
import { parseTime } from './lease-record.js';
import type { LivenessStrategy } from './liveness-strategy.js';
import type { Logger } from './logger.js';
import { isMarked, markAndDelete } from './member-mark.js';
import type { Member, MemberEvent, MemberListener } from './member.js';
import type { MonitoredStore } from './monitored-store.js';
import { MEMBER_PREFIX, parseKey } from './record-key.js';
import { ScopeClaims } from './scope-claims.js';
import type { RecordKey } from './store.js';
import { scopeCovers, type CacheChange, type CacheEntry, type WatchCache } from './watch-cache.js';

/** A record this process judges: a present member, or (`member` undefined) a mark whose marker has not deleted it yet. */
interface Judged {
  member: Member | undefined;
  entry: CacheEntry;
  leaseMs: number;
  expiryTimer: Timer | undefined;
}

/**
 * The members of every role this process reads, derived from the shared
 * cache: a role enters the cache when first listed or watched (`watch`) and
 * stays until the registry closes. A member is present while its record exists
 * and its liveness strategy vouches for it.
 *
 * When the strategy leaves expiry to readers (the `heartbeat` mode), a member
 * is present while its record has changed within its lease by this process's
 * clock ({@link judgeExpiry}). An expired record is marked by compare-and-set
 * and the one reader whose mark lands deletes it ({@link markAndDelete}), so a
 * member that renewed meanwhile keeps its record (and comes back as added), a
 * crashed member costs one delete, and a mark whose marker died before
 * deleting expires a lease later and is marked again. Otherwise (the `reaper`
 * mode, and every pod-mode record) records change only on announce, payload
 * change and withdraw and this process judges no expiry: the reaper marks and
 * deletes, or the pod strategy stops vouching for a member whose pod is not
 * Ready. A mark, and a member no longer vouched for, is reported as `removed`
 * with reason `expired`.
 * @internal
 */
export class MemberDirectory {
  private readonly judged = new Map<RecordKey, Judged>();
  private readonly listeners = new Set<{ role: string | undefined; listener: MemberListener }>();
  private readonly unsubscribe: () => void;
  private readonly offLive: () => void;
  private readonly expiring = new Set<RecordKey>();
  /** The cache's holds, by scope: `member/<role>/`, or `member/` for every role. */
  private readonly claims: ScopeClaims;

  constructor(
    private readonly cache: WatchCache,
    private readonly store: MonitoredStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Delay before confirming an expiry again after the backend could not say. Milliseconds. */
    private readonly retryMs: number,
    /** The registry's liveness strategy: whether readers judge expiry, whether it vouches for a member, and its last heartbeat. */
    private readonly liveness: Pick<LivenessStrategy, 'readersExpire' | 'vouches' | 'lastHeartbeat'>,
    /** `registry.readOnly`: an expiry is confirmed by reading the record unchanged, never by marking or deleting it. */
    private readonly readOnly = false,
  ) {
    this.claims = new ScopeClaims(cache);
    for (const entry of cache.list(MEMBER_PREFIX)) this.onChange({ type: 'added', entry });
    this.unsubscribe = cache.subscribe(MEMBER_PREFIX, (change) => this.onChange(change));
    // Time this process spent blind does not count against anyone: judged again once the watch is back.
    this.offLive = cache.onLive((scope) => {
      for (const judged of this.judged.values()) if (scopeCovers(scope, judged.entry.key)) this.arm(judged);
    });
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

  /** Judges `key`'s record again as the cache has it: the strategy's word on it changed (see {@link LivenessStrategy.vouches}). */
  rejudge(key: RecordKey): void {
    const entry = this.cache.get(key);
    if (entry) this.onChange({ type: 'added', entry });
  }

  close(): void {
    this.claims.release();
    this.unsubscribe();
    this.offLive();
    for (const j of this.judged.values()) j.expiryTimer?.cancel();
    this.judged.clear();
  }

  private presentMembers(): Member[] {
    return [...this.judged.values()].flatMap((j) => (j.member ? [j.member] : []));
  }

  private onChange(change: CacheChange): void {
    if (change.type === 'removed') {
      // Gone after its lease ran out is an expiry whoever deleted it (a mark this watch did not see: coalesced, or made before it listed).
      const expired = this.expiring.delete(change.previous.key) || this.ranOut(change.previous.key);
      this.drop(change.previous.key, expired ? 'expired' : 'deleted');
      this.forget(change.previous.key);
      return;
    }
    const entry = change.entry;
    const parsed = parseKey(entry.key);
    if (!parsed || parsed.kind !== 'member') return;
    if (!entry.stored) {
      this.logger.warn({ key: entry.key }, '[rollcall] member record is corrupt; treating the member as gone');
      this.drop(entry.key, 'corrupt');
      this.forget(entry.key);
      return;
    }
    const record = entry.stored.record;
    const leaseMs = record.leaseDurationSeconds * 1000;
    if (isMarked(record) || this.liveness.vouches?.(entry) === false) {
      this.drop(entry.key, 'expired');
      // A mark its marker has not deleted: judged like a member, so it goes even if that marker died.
      if (isMarked(record) && this.liveness.readersExpire(entry) && !this.readOnly) this.track({ member: undefined, entry, leaseMs, expiryTimer: undefined });
      else this.forget(entry.key);
      return;
    }
    const member: Member = {
      role: parsed.role!,
      id: parsed.id!,
      payload: record.payload,
      acquireTime: parseTime(record.acquireTime),
      renewTime: this.liveness.lastHeartbeat?.(parsed.role!, parsed.id!) ?? parseTime(record.renewTime),
      leaseDurationMs: leaseMs,
    };
    const previous = this.judged.get(entry.key)?.member;
    this.track({ member, entry, leaseMs, expiryTimer: undefined });
    if (!previous) this.emit({ type: 'added', member });
    else if (JSON.stringify(previous.payload) !== JSON.stringify(member.payload)) this.emit({ type: 'updated', member, previous });
  }

  private track(judged: Judged): void {
    this.judged.get(judged.entry.key)?.expiryTimer?.cancel();
    this.judged.set(judged.entry.key, judged);
    this.arm(judged);
  }

  private forget(key: RecordKey): void {
    this.judged.get(key)?.expiryTimer?.cancel();
    this.judged.delete(key);
  }

  /** Sets the timer for when `judged` runs out (at least `atLeastMs` from now); none while blind (`onLive` re-arms) or when readers judge no expiry. */
  private arm(judged: Judged, atLeastMs = 0): void {
    judged.expiryTimer?.cancel();
    judged.expiryTimer = undefined;
    if (!this.liveness.readersExpire(judged.entry)) return;
    const expiry = this.expiry(judged);
    if (!expiry.live) return;
    judged.expiryTimer = this.clock.setTimeout(() => this.expire(judged), Math.max(atLeastMs, expiry.dueInMs ?? 0));
  }

  /**
   * Whether `key`'s member, judged by readers, had run out when its record went:
   * unchanged for its lease as this process saw it, or by its own renew time
   * against this machine's clock (a process that started reading after the last
   * heartbeat, whose watch then missed the mark).
   */
  private ranOut(key: RecordKey): boolean {
    const judged = this.judged.get(key);
    if (judged?.member === undefined || !this.liveness.readersExpire(judged.entry)) return false;
    if (this.clock.now() - judged.entry.observedAt >= judged.leaseMs) return true;
    const renewed = judged.member.renewTime?.getTime();
    return renewed !== undefined && this.clock.wallNow().getTime() - renewed >= judged.leaseMs;
  }

  private expiry(judged: Judged) {
    return judgeExpiry(judged.leaseMs, [judged.entry.observedAt], [this.cache.sight(judged.entry.key)], this.clock.now());
  }

  /**
   * A record that has not changed for its lease. Its member is reported
   * removed only once the backend confirms the record is still that version —
   * by this process's mark landing, or by the record having been deleted (by
   * someone else's mark, or one that may not write reading it unchanged) — so a
   * view that is merely stale (a watch silently behind, the backend down)
   * produces no phantom removal.
   */
  private expire(judged: Judged): void {
    const { entry } = judged;
    if (this.judged.get(entry.key) !== judged) return;
    const expiry = this.expiry(judged);
    // While the watch is down, an unseen heartbeat is our blindness, not the member's death: decided when it is back.
    if (!expiry.live) return;
    if (!expiry.expired) return this.arm(judged);
    const retry = () => {
      this.expiring.delete(entry.key);
      if (this.judged.get(entry.key) === judged) this.arm(judged, this.retryMs);
    };
    const confirmed = () => {
      this.expiring.delete(entry.key);
      if (this.judged.get(entry.key) === judged) this.drop(entry.key, 'expired');
    };
    // Our own mark and delete come back through the watch, maybe before the call returns: still an expiry.
    this.expiring.add(entry.key);
    (this.readOnly ? confirmByRead(this.store, entry.key, entry.version) : markAndDelete(this.store, entry.key, entry.version, entry.stored!.record, this.clock.wallNow()))
      .catch(async (err: unknown) => {
        // An identity that may not write still may read: the record unchanged is as good a proof.
        if (hasCode(err, ErrorCode.PERMISSION_DENIED)) return confirmByRead(this.store, entry.key, entry.version);
        throw err;
      })
      .then(
        (confirmation) => (confirmation === 'changed' ? retry() : confirmed()), // changed: it renewed, the watch brings the new version
        (err: unknown) => {
          this.logger.debug({ err, key: entry.key }, '[rollcall] could not confirm an expired member; trying again');
          retry();
        },
      );
  }

  private drop(key: RecordKey, reason: 'deleted' | 'expired' | 'corrupt'): void {
    const judged = this.judged.get(key);
    if (!judged?.member) return;
    judged.expiryTimer?.cancel();
    this.judged.delete(key);
    this.emit({ type: 'removed', member: judged.member, reason });
  }

  private emit(event: MemberEvent): void {
    for (const { role, listener } of [...this.listeners]) {
      if (role !== undefined && role !== event.member.role) continue;
      try {
        listener(event);
      } catch (err) {
        this.logger.error({ err }, '[rollcall] a member listener threw');
      }
    }
  }
}
