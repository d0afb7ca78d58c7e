import { judgeExpiry, type Confirmation, type Expiry } from './expiry.js';
import { isMarked, LivenessJudge, type Judged } from './liveness-judge.js';
import { declaredLiveness, type LivenessContext } from './member-liveness.js';
import { HEARTBEAT_PREFIX, heartbeatKey, MEMBER_PREFIX, memberKey } from './record-key.js';
import type { CacheChange, CacheEntry, Claim } from './watch-cache.js';

/** What this process knows of one member id of a role in the `reaper` mode: its member record and its heartbeat record, as the cache has them. @internal */
export interface HeartbeatPair {
  id: string;
  member: CacheEntry | undefined;
  heartbeat: CacheEntry | undefined;
  /** When this process first saw the heartbeat without a member record (monotonic ms). */
  orphanSince: number | undefined;
}

/** What the owner of a {@link HeartbeatPairs} does with a pair. @internal */
export interface PairActions {
  /** The pair ran out by {@link HeartbeatPairs.expiry}: confirm it (see {@link LivenessJudge}). */
  confirm(pair: HeartbeatPair): Promise<Confirmation>;
  /** Its expiry was confirmed. */
  expired?(pair: HeartbeatPair): void;
  /** One of the pair's records changed (`pair` undefined: both are gone). */
  changed?(id: string, pair: HeartbeatPair | undefined): void;
}

/**
 * The member and heartbeat records of one role (`member/<role>/`,
 * `heartbeat/<role>/`), watched from now until close, paired by id and judged
 * by the one rule through the one judge: a member expires when neither of its
 * records has changed for its lease since this process saw either change,
 * counting from no earlier than `startedAt` and the last time the watch came
 * back; a heartbeat alone goes a lease after it was first seen alone; a
 * half-done reaping (a marked member record) is due at once. A member whose
 * record declares another liveness (a cluster switching modes) is not judged
 * here: a pod member goes with its pod, a heartbeat member by its lease.
 * @internal
 */
export class HeartbeatPairs {
  private readonly pairs = new Map<string, HeartbeatPair>();
  /** What the judge judges of each pair: one object per pair, so a change while it is being confirmed does not start a second confirmation. */
  private readonly judged = new Map<string, Judged>();
  private readonly judge: LivenessJudge;
  private readonly claims: Claim[];
  private readonly offs: (() => void)[];
  private readonly startedAt: number;
  private readonly memberScope: string;
  private readonly heartbeatScope: string;

  constructor(
    private readonly role: string,
    private readonly context: LivenessContext,
    private readonly actions: PairActions,
  ) {
    const { cache, clock, logger } = context;
    this.startedAt = clock.now();
    // Delay before trying again when the backend could not answer: a heartbeat interval.
    this.judge = new LivenessJudge({ clock, logger, retryMs: context.member.heartbeatIntervalMs });
    this.memberScope = `${MEMBER_PREFIX}${role}/`;
    this.heartbeatScope = `${HEARTBEAT_PREFIX}${role}/`;
    this.claims = [cache.claim(this.memberScope), cache.claim(this.heartbeatScope)];
    this.offs = [cache.subscribe(this.memberScope, (change) => this.onChange(change)), cache.subscribe(this.heartbeatScope, (change) => this.onChange(change)), cache.onLive(() => this.judge.rearm())];
    for (const entry of [...cache.list(this.memberScope), ...cache.list(this.heartbeatScope)]) this.onChange({ type: 'added', entry });
  }

  /** Resolves once both scopes are listed; rejects if a list failed before that (the cache keeps trying). */
  async ready(): Promise<void> {
    await Promise.all(this.claims.map((c) => c.ready()));
  }

  get(id: string): HeartbeatPair | undefined {
    return this.pairs.get(id);
  }

  /** Stops judging `id` until one of its records changes. */
  forget(id: string): void {
    this.judge.forget(id);
  }

  close(): void {
    this.offs.forEach((off) => off());
    this.claims.forEach((c) => c.release());
    this.judge.close();
    this.pairs.clear();
    this.judged.clear();
  }

  /** The lease a pair is judged by: its heartbeat's, else its member record's, else this process's configured one. Milliseconds. */
  leaseMs(pair: HeartbeatPair): number {
    const seconds = pair.heartbeat?.stored?.record.leaseDurationSeconds ?? pair.member?.stored?.record.leaseDurationSeconds;
    return seconds !== undefined ? seconds * 1000 : this.context.member.leaseDurationMs;
  }

  /** When a pair is due (see the class comment). */
  expiry(pair: HeartbeatPair): Expiry {
    const { cache, clock } = this.context;
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
    if (!pair) this.pairs.set(id, (pair = { id, member: undefined, heartbeat: undefined, orphanSince: undefined }));
    const entry = change.type === 'removed' ? undefined : change.entry;
    if (isMember) pair.member = entry;
    else pair.heartbeat = entry;
    if (pair.member || !pair.heartbeat) pair.orphanSince = undefined;
    else pair.orphanSince ??= this.context.clock.now();
    if (!pair.member && !pair.heartbeat) {
      this.judge.forget(id);
      this.pairs.delete(id);
      this.judged.delete(id);
      this.actions.changed?.(id, undefined);
      return;
    }
    // A member that declares another liveness is not judged here: a pod's goes with its pod, a heartbeat one's by its lease.
    const mode = pair.member && declaredLiveness(pair.member);
    if (mode === 'pod' || mode === 'heartbeat') this.judge.forget(id);
    else this.track(pair);
    this.actions.changed?.(id, pair);
  }

  private track(pair: HeartbeatPair): void {
    let judged = this.judged.get(pair.id);
    if (!judged) {
      judged = { expiry: () => this.expiry(pair), confirm: () => this.actions.confirm(pair), expired: () => this.actions.expired?.(pair) };
      this.judged.set(pair.id, judged);
    }
    this.judge.track(pair.id, judged);
  }
}
