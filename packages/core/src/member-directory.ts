import type { Clock, Timer } from './clock.js';
import { ErrorCode, hasCode } from './errors.js';
import { parseTime } from './lease-record.js';
import type { Logger } from './logger.js';
import type { Member, MemberEvent, MemberListener } from './member.js';
import { isReaped, type MemberLiveness } from './member-liveness.js';
import type { MonitoredStore } from './monitored-store.js';
import { MEMBER_PREFIX, parseKey } from './record-key.js';
import type { RecordKey } from './store.js';
import { scopeCovers, type CacheChange, type CacheEntry, type Claim, type WatchCache } from './watch-cache.js';

interface Present {
  member: Member;
  entry: CacheEntry;
  version: string;
  leaseMs: number;
  expiryTimer: Timer | undefined;
}

/**
 * The members of every role this process reads, derived from the shared
 * cache: a role enters the cache when first listed or watched (`watch`) and
 * stays until the registry closes. A member is
 * present while its record exists and has changed within its lease duration by
 * this process's clock. An expired record is reported removed at once and
 * then deleted with a compare-and-set, so a member that renewed meanwhile
 * keeps its record (and comes back as added).
 *
 * In the `reaper` mode a member record changes only on announce, payload
 * change and withdraw, so this process judges no expiry: the role's reaper
 * marks an expired member's record (no holder: {@link isReaped}) and deletes
 * it, and the mark is reported as `removed` with reason `expired`.
 * @internal
 */
export class MemberDirectory {
  private readonly present = new Map<RecordKey, Present>();
  private readonly listeners = new Set<{ role: string | undefined; listener: MemberListener }>();
  private readonly unsubscribe: () => void;
  private readonly offLive: () => void;
  private readonly expiring = new Set<RecordKey>();
  /** The cache's holds, by scope: `member/<role>/`, or `member/` for every role. */
  private readonly claims = new Map<string, Claim>();

  constructor(
    private readonly cache: WatchCache,
    private readonly store: MonitoredStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Delay before confirming an expiry again after the backend could not say. Milliseconds. */
    private readonly retryMs: number,
    private readonly liveness: MemberLiveness = 'heartbeat',
  ) {
    for (const entry of cache.list(MEMBER_PREFIX)) this.onChange({ type: 'added', entry });
    this.unsubscribe = cache.subscribe(MEMBER_PREFIX, (change) => this.onChange(change));
    // Time this process spent blind does not count against anyone: after the watch comes
    // back, every member gets a whole lease, from then, to show it is alive.
    this.offLive = cache.onLive((scope) => {
      if (liveness === 'reaper') return;
      for (const present of this.present.values()) if (scopeCovers(scope, present.entry.key)) this.arm(present, present.leaseMs);
    });
  }

  /** The roles in the cache: those claimed one by one, and with every role claimed, each that has a member. Sorted. */
  watchedRoles(): string[] {
    const named = [...this.claims.keys()].filter((s) => s !== MEMBER_PREFIX).map((s) => s.slice(MEMBER_PREFIX.length, -1));
    return [...new Set([...named, ...(this.claims.has(MEMBER_PREFIX) ? this.roles() : [])])].sort();
  }

  /**
   * Keeps `role`'s members (every role's when undefined) in the cache from now
   * on; resolves once they are listed, rejects if that list failed (the cache
   * keeps trying).
   */
  watch(role: string | undefined): Promise<void> {
    const scope = role === undefined ? MEMBER_PREFIX : `${MEMBER_PREFIX}${role}/`;
    let claim = this.claims.get(scope);
    if (!claim) this.claims.set(scope, (claim = this.cache.claim(scope)));
    return claim.ready();
  }

  /** Present members of `role`, sorted by id. */
  members(role: string): Member[] {
    return [...this.present.values()].map((p) => p.member).filter((m) => m.role === role).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Roles with at least one present member, sorted. */
  roles(): string[] {
    return [...new Set([...this.present.values()].map((p) => p.member.role))].sort();
  }

  /** Calls `listener` for each change of `role` (every role when undefined); returns the unsubscribe function. */
  subscribe(role: string | undefined, listener: MemberListener): () => void {
    const item = { role, listener };
    this.listeners.add(item);
    return () => this.listeners.delete(item);
  }

  close(): void {
    for (const claim of this.claims.values()) claim.release();
    this.unsubscribe();
    this.offLive();
    for (const p of this.present.values()) p.expiryTimer?.cancel();
    this.present.clear();
  }

  private onChange(change: CacheChange): void {
    if (change.type === 'removed') {
      this.drop(change.previous.key, this.expiring.delete(change.previous.key) ? 'expired' : 'deleted');
      return;
    }
    const entry = change.entry;
    const parsed = parseKey(entry.key);
    if (!parsed || parsed.kind !== 'member') return;
    if (!entry.stored) {
      this.logger.warn({ key: entry.key }, '[rollcall] member record is corrupt; treating the member as gone');
      this.drop(entry.key, 'corrupt');
      return;
    }
    const record = entry.stored.record;
    if (this.liveness === 'reaper' && isReaped(record)) {
      this.drop(entry.key, 'expired');
      return;
    }
    const member: Member = { role: parsed.role!, id: parsed.id!, payload: record.payload, acquireTime: parseTime(record.acquireTime), renewTime: parseTime(record.renewTime) };
    const previous = this.present.get(entry.key);
    previous?.expiryTimer?.cancel();
    const present: Present = { member, entry, version: entry.version, leaseMs: record.leaseDurationSeconds * 1000, expiryTimer: undefined };
    this.present.set(entry.key, present);
    if (this.liveness === 'heartbeat') this.arm(present, entry.observedAt + present.leaseMs - this.clock.now());
    if (!previous) this.emit({ type: 'added', member });
    else if (JSON.stringify(previous.member.payload) !== JSON.stringify(member.payload)) this.emit({ type: 'updated', member, previous: previous.member });
  }

  private arm(present: Present, delayMs: number): void {
    present.expiryTimer?.cancel();
    present.expiryTimer = this.clock.setTimeout(() => this.expire(present.entry), Math.max(0, delayMs));
  }

  /**
   * A member whose record has not changed for its lease. It is reported removed
   * only once the backend confirms the record is still that version — by the
   * compare-and-set delete succeeding — so a view that is merely stale (a watch
   * silently behind, the backend down) produces no phantom removal.
   */
  private expire(entry: CacheEntry): void {
    const current = this.present.get(entry.key);
    if (!current || current.version !== entry.version) return;
    // While the watch is down, an unseen heartbeat is our blindness, not the member's death: decided when it is back.
    if (!this.cache.sight(entry.key).live) return;
    const retry = () => {
      this.expiring.delete(entry.key);
      if (this.present.get(entry.key) === current) this.arm(current, this.retryMs);
    };
    // Our own delete comes back through the watch, maybe before the call returns: it is still an expiry.
    this.expiring.add(entry.key);
    this.store.delete(entry.key, entry.version).then(
      () => this.confirmExpired(current),
      async (err: unknown) => {
        if (hasCode(err, ErrorCode.NOT_FOUND)) return this.confirmExpired(current);
        if (hasCode(err, ErrorCode.CONFLICT)) return retry(); // it renewed; the watch brings the new version
        if (hasCode(err, ErrorCode.PERMISSION_DENIED)) {
          // An identity that may not delete still may read: the record unchanged is as good a proof.
          const fresh = await this.store.get(entry.key).catch(() => null);
          if (fresh === undefined || fresh?.version === entry.version) return this.confirmExpired(current);
        }
        this.logger.debug({ err, key: entry.key }, '[rollcall] could not confirm an expired member; trying again');
        retry();
      },
    );
  }

  private confirmExpired(present: Present): void {
    this.expiring.delete(present.entry.key);
    if (this.present.get(present.entry.key) === present) this.drop(present.entry.key, 'expired');
  }

  private drop(key: RecordKey, reason: 'deleted' | 'expired' | 'corrupt'): void {
    const present = this.present.get(key);
    if (!present) return;
    present.expiryTimer?.cancel();
    this.present.delete(key);
    this.emit({ type: 'removed', member: present.member, reason });
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
