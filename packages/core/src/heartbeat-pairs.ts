import type { Timer } from './clock.js';
import { judgeExpiry, type Expiry } from './expiry.js';
import type { LivenessContext } from './liveness-strategy.js';
import { isMarked } from './member-mark.js';
import { HEARTBEAT_PREFIX, heartbeatKey, MEMBER_PREFIX, memberKey } from './record-key.js';
import { podUidOf } from './record-liveness.js';
import type { CacheChange, CacheEntry, Claim } from './watch-cache.js';

/** What this process knows of one member id of a role in the `reaper` mode: its member record and its heartbeat record, as the cache has them. @internal */
export interface HeartbeatPair {
  id: string;
  member: CacheEntry | undefined;
  heartbeat: CacheEntry | undefined;
  /** When this process first saw the heartbeat without a member record (monotonic ms). */
  orphanSince: number | undefined;
  timer: Timer | undefined;
  /** Its `due` action runs: not armed again until it settles. */
  acting: boolean;
}

/** What the owner of a {@link HeartbeatPairs} does with a pair. @internal */
export interface PairActions {
  /** The pair ran out (by {@link HeartbeatPairs.expiry}); resolves when done. Armed again a retry delay later unless it returns false. */
  due(pair: HeartbeatPair): Promise<boolean | void>;
  /** One of the pair's records changed (`pair` undefined: both are gone). */
  changed?(id: string, pair: HeartbeatPair | undefined): void;
}

/**
 * The member and heartbeat records of one role (`member/<role>/`,
 * `heartbeat/<role>/`), watched from now until close, paired by id and judged
 * by the one rule ({@link judgeExpiry}): a member expires when neither of its
 * records has changed for its lease since this process saw either change,
 * counting from no earlier than `startedAt` and the last time the watch came
 * back; a heartbeat alone goes a lease after it was first seen alone; a
 * half-done reaping (a marked member record) is due at once. The reaper acts
 * on a due pair by writing; a read-only reader by reporting it.
 * @internal
 */
export class HeartbeatPairs {
  private readonly pairs = new Map<string, HeartbeatPair>();
  private readonly claims: Claim[];
  private readonly offs: (() => void)[];
  private readonly startedAt: number;
  private readonly memberScope: string;
  private readonly heartbeatScope: string;
  private closed = false;

  constructor(
    private readonly role: string,
    private readonly options: LivenessContext,
    private readonly actions: PairActions,
  ) {
    const { cache, clock } = options;
    this.startedAt = clock.now();
    this.memberScope = `${MEMBER_PREFIX}${role}/`;
    this.heartbeatScope = `${HEARTBEAT_PREFIX}${role}/`;
    this.claims = [cache.claim(this.memberScope), cache.claim(this.heartbeatScope)];
    this.offs = [
      cache.subscribe(this.memberScope, (change) => this.onChange(change)),
      cache.subscribe(this.heartbeatScope, (change) => this.onChange(change)),
      cache.onLive(() => this.pairs.forEach((p) => this.arm(p))),
    ];
    for (const entry of [...cache.list(this.memberScope), ...cache.list(this.heartbeatScope)]) this.onChange({ type: 'added', entry });
  }

  /** Resolves once both scopes are listed; rejects if a list failed before that (the cache keeps trying). */
  async ready(): Promise<void> {
    await Promise.all(this.claims.map((c) => c.ready()));
  }

  get(id: string): HeartbeatPair | undefined {
    return this.pairs.get(id);
  }

  close(): void {
    this.closed = true;
    this.offs.forEach((off) => off());
    this.claims.forEach((c) => c.release());
    this.pairs.forEach((p) => p.timer?.cancel());
    this.pairs.clear();
  }

  /** The lease a pair is judged by: its heartbeat's, else its member record's, else this process's configured one. Milliseconds. */
  leaseMs(pair: HeartbeatPair): number {
    const seconds = pair.heartbeat?.stored?.record.leaseDurationSeconds ?? pair.member?.stored?.record.leaseDurationSeconds;
    return seconds !== undefined ? seconds * 1000 : this.options.member.leaseDurationMs;
  }

  /** When a pair is due (see the class comment). */
  expiry(pair: HeartbeatPair): Expiry {
    const { cache, clock } = this.options;
    const sights = [cache.sight(memberKey(this.role, pair.id)), cache.sight(heartbeatKey(this.role, pair.id))];
    if (pair.member?.stored && isMarked(pair.member.stored.record)) return judgeExpiry(0, [this.startedAt], sights, clock.now());
    const seen = pair.member ? [pair.member.observedAt, pair.heartbeat?.observedAt ?? -Infinity] : [pair.orphanSince!];
    return judgeExpiry(this.leaseMs(pair), [this.startedAt, ...seen], sights, clock.now());
  }

  private onChange(change: CacheChange): void {
    const key = change.type === 'removed' ? change.previous.key : change.entry.key;
    const isMember = key.startsWith(this.memberScope);
    const id = key.slice((isMember ? this.memberScope : this.heartbeatScope).length);
    if (!id || id.includes('/')) return;
    let pair = this.pairs.get(id);
    if (!pair) this.pairs.set(id, (pair = { id, member: undefined, heartbeat: undefined, orphanSince: undefined, timer: undefined, acting: false }));
    const entry = change.type === 'removed' ? undefined : change.entry;
    if (isMember) pair.member = entry;
    else pair.heartbeat = entry;
    if (pair.member || !pair.heartbeat) pair.orphanSince = undefined;
    else pair.orphanSince ??= this.options.clock.now();
    if (!pair.member && !pair.heartbeat) {
      pair.timer?.cancel();
      this.pairs.delete(id);
      this.actions.changed?.(id, undefined);
      return;
    }
    this.arm(pair);
    this.actions.changed?.(id, pair);
  }

  /** Delay before trying again when the backend could not answer: a heartbeat interval. Milliseconds. */
  private get retryMs(): number {
    return this.options.member.heartbeatIntervalMs;
  }

  /** Sets the pair's timer: when it is due, at least `atLeastMs` from now; none while a watch is blind (onLive re-arms). */
  private arm(pair: HeartbeatPair, atLeastMs = 0): void {
    pair.timer?.cancel();
    pair.timer = undefined;
    // A pod-mode member (a cluster switching to `pod`) has no heartbeat record: it goes with its pod, never by a lease.
    if (this.closed || pair.acting || (pair.member && podUidOf(pair.member) !== undefined)) return;
    const expiry = this.expiry(pair);
    if (!expiry.live) return;
    pair.timer = this.options.clock.setTimeout(() => this.act(pair), Math.max(atLeastMs, expiry.dueInMs ?? 0));
  }

  private act(pair: HeartbeatPair): void {
    if (this.closed || this.pairs.get(pair.id) !== pair) return;
    const expiry = this.expiry(pair);
    // While a watch is down, an unseen heartbeat is our blindness: decided once it is back (onLive re-arms).
    if (!expiry.live) return;
    if (!expiry.expired) return this.arm(pair);
    pair.acting = true;
    // The watch brings what the action changed, and re-arms; the retry delay is the fallback.
    this.actions.due(pair).then(
      (again) => {
        pair.acting = false;
        if (again !== false && this.pairs.get(pair.id) === pair) this.arm(pair, this.retryMs);
      },
      (err: unknown) => {
        pair.acting = false;
        this.options.logger.debug({ err, role: this.role, id: pair.id }, '[rollcall] could not act on an expired member; trying again');
        if (this.pairs.get(pair.id) === pair) this.arm(pair, this.retryMs);
      },
    );
  }
}
