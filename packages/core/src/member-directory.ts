import type { Clock, Timer } from './clock.js';
import { ErrorCode, hasCode } from './errors.js';
import { parseTime } from './lease-record.js';
import type { Logger } from './logger.js';
import type { Member, MemberEvent, MemberListener } from './member.js';
import type { MonitoredStore } from './monitored-store.js';
import { MEMBER_PREFIX, parseKey } from './record-key.js';
import type { RecordKey } from './store.js';
import type { CacheChange, CacheEntry, WatchCache } from './watch-cache.js';

interface Present {
  member: Member;
  version: string;
  expiryTimer: Timer;
}

/**
 * Every member this process can see, derived from the shared cache: a member is
 * present while its record exists and has changed within its lease duration by
 * this process's clock. An expired record is reported removed at once and
 * then deleted with a compare-and-set, so a member that renewed meanwhile
 * keeps its record (and comes back as added).
 */
export class MemberDirectory {
  private readonly present = new Map<RecordKey, Present>();
  private readonly listeners = new Set<{ role: string | undefined; listener: MemberListener }>();
  private readonly unsubscribe: () => void;
  private readonly offLive: () => void;
  private readonly deferred = new Map<RecordKey, CacheEntry>();
  private settleTimer: Timer | undefined;

  /**
   * @param settleMs after the watch comes back, how long resumed changes get to
   *   arrive before members that fell due while this process was blind are expired.
   */
  constructor(
    private readonly cache: WatchCache,
    private readonly store: MonitoredStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly settleMs: number,
  ) {
    for (const entry of cache.list(MEMBER_PREFIX)) this.onChange({ type: 'added', entry });
    this.unsubscribe = cache.subscribe(MEMBER_PREFIX, (change) => this.onChange(change));
    this.offLive = cache.onLive(() => {
      this.settleTimer?.cancel();
      this.settleTimer = this.clock.setTimeout(() => {
        const due = [...this.deferred.values()];
        this.deferred.clear();
        due.forEach((entry) => this.expire(entry));
      }, this.settleMs);
    });
  }

  /** Present members of `role`, sorted by id. */
  members(role: string): Member[] {
    return [...this.present.values()].map((p) => p.member).filter((m) => m.role === role).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Calls `listener` for each change of `role` (every role when undefined); returns the unsubscribe function. */
  subscribe(role: string | undefined, listener: MemberListener): () => void {
    const item = { role, listener };
    this.listeners.add(item);
    return () => this.listeners.delete(item);
  }

  close(): void {
    this.unsubscribe();
    this.offLive();
    this.settleTimer?.cancel();
    for (const p of this.present.values()) p.expiryTimer.cancel();
    this.present.clear();
  }

  private onChange(change: CacheChange): void {
    if (change.type === 'removed') {
      this.drop(change.previous.key, 'deleted');
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
    const member: Member = { role: parsed.role!, id: parsed.id!, payload: record.payload, acquireTime: parseTime(record.acquireTime), renewTime: parseTime(record.renewTime) };
    const previous = this.present.get(entry.key);
    previous?.expiryTimer.cancel();
    const expiresIn = entry.observedAt + record.leaseDurationSeconds * 1000 - this.clock.now();
    const expiryTimer = this.clock.setTimeout(() => this.expire(entry), Math.max(0, expiresIn));
    this.present.set(entry.key, { member, version: entry.version, expiryTimer });
    if (!previous) this.emit({ type: 'added', member });
    else if (JSON.stringify(previous.member.payload) !== JSON.stringify(member.payload)) this.emit({ type: 'updated', member, previous: previous.member });
  }

  private expire(entry: CacheEntry): void {
    const current = this.present.get(entry.key);
    if (!current || current.version !== entry.version) return;
    // While the watch is down, an unseen heartbeat is our blindness, not the member's death.
    if (!this.cache.live) {
      this.deferred.set(entry.key, entry);
      return;
    }
    this.drop(entry.key, 'expired');
    this.store.delete(entry.key, entry.version).catch((err: unknown) => {
      if (!hasCode(err, ErrorCode.CONFLICT, ErrorCode.NOT_FOUND)) this.logger.debug({ err, key: entry.key }, '[rollcall] could not delete an expired member');
    });
  }

  private drop(key: RecordKey, reason: 'deleted' | 'expired' | 'corrupt'): void {
    const present = this.present.get(key);
    if (!present) return;
    present.expiryTimer.cancel();
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
