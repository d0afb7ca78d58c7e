import type { Timer } from './clock.js';
import { deleteRecord } from './delete-record.js';
import { confirmByWrite, judgeExpiry, type Expiry } from './expiry.js';
import type { LeaseHolder } from './lease-holder.js';
import type { LivenessContext, LivenessStrategy, MemberKeeping } from './liveness-strategy.js';
import { isMarked, markAndDelete } from './member-mark.js';
import { podUidOf } from './record-liveness.js';
import { electionKey, HEARTBEAT_PREFIX, heartbeatKey, MEMBER_PREFIX, memberKey, reaperElection } from './record-key.js';
import type { CacheChange, CacheEntry, Claim } from './watch-cache.js';

/**
 * The `reaper` liveness mode: the member record `member/<role>/<id>` is
 * written only on announce, payload change and withdraw; heartbeats renew
 * `heartbeat/<role>/<id>`. For each role this process reads that has a member,
 * it campaigns for that role's reaper election (`rollcall-reaper.<role>`);
 * while it leads, it watches the role's heartbeat records and removes the
 * members whose heartbeat has stopped. Readers judge no expiry.
 * @internal
 */
export class MemberReaper implements LivenessStrategy {
  readonly mode = 'reaper' as const;
  private readonly roles = new Map<string, RoleReaper>();

  constructor(private readonly options: LivenessContext) {}

  readersExpire(): boolean {
    return false;
  }

  keeping(role: string, id: string): MemberKeeping {
    return { heartbeatKey: heartbeatKey(role, id), heartbeats: true, liveness: { mode: 'reaper' } };
  }

  /** Campaigns to reap `role`'s members, from now until close. Idempotent. */
  reading(role: string): void {
    if (!this.roles.has(role)) this.roles.set(role, new RoleReaper(role, this.options));
  }

  close(): void {
    this.roles.forEach((r) => r.close());
    this.roles.clear();
  }
}

/** What the reaper knows of one member id: its member record and its heartbeat record, as the cache has them. */
interface Pair {
  id: string;
  member: CacheEntry | undefined;
  heartbeat: CacheEntry | undefined;
  /** When this process first saw the heartbeat without a member record (monotonic ms). */
  orphanSince: number | undefined;
  timer: Timer | undefined;
  acting: boolean;
}

class RoleReaper {
  private readonly holder: LeaseHolder;
  private term: ReapTerm | undefined;

  constructor(
    readonly role: string,
    private readonly options: LivenessContext,
  ) {
    this.holder = options.holder(electionKey(reaperElection(role)));
    this.holder.on('acquired', () => {
      options.logger.info({ role }, '[rollcall] reaping this role');
      this.term ??= new ReapTerm(role, options);
    });
    this.holder.on('lost', () => this.endTerm());
    this.holder.on('failed', ({ error }) => options.logger.warn({ err: error, role }, '[rollcall] cannot campaign to reap this role'));
    this.holder.start();
  }

  close(): void {
    this.endTerm();
  }

  private endTerm(): void {
    this.term?.close();
    this.term = undefined;
  }
}

/**
 * One term as a role's reaper. A member is expired when neither its member
 * record nor its heartbeat record has changed for its lease since this process
 * saw either change, counting from no earlier than the start of this term
 * and the last time the watch came back: time it could not see does not
 * count. Then it deletes the heartbeat record (compare-and-set: a heartbeat
 * meanwhile keeps the member), marks the member record expired
 * (compare-and-set on the version it saw: readers report `removed`, reason
 * `expired`, with the last data) and deletes it.
 *
 * The two half-written states end consistent: a member record without a
 * heartbeat record (a crash between the two writes of an announce) expires a
 * lease after it was last seen to change; a heartbeat record without a member
 * record (a crash between the two deletes of a withdraw or of a reaping) is
 * deleted a lease after this process first saw it alone, whether or not it is
 * renewed, so a live member finds it gone and announces again.
 */
class ReapTerm {
  private readonly pairs = new Map<string, Pair>();
  private readonly claims: Claim[];
  private readonly offs: (() => void)[];
  private readonly startedAt: number;
  private readonly memberScope: string;
  private readonly heartbeatScope: string;
  private closed = false;

  constructor(
    private readonly role: string,
    private readonly options: LivenessContext,
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

  close(): void {
    this.closed = true;
    this.offs.forEach((off) => off());
    this.claims.forEach((c) => c.release());
    this.pairs.forEach((p) => p.timer?.cancel());
    this.pairs.clear();
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
      return;
    }
    this.arm(pair);
  }

  /** Delay before trying again when the backend could not answer: a heartbeat interval. Milliseconds. */
  private get retryMs(): number {
    return this.options.member.heartbeatIntervalMs;
  }

  /** The lease a pair is judged by: its heartbeat's, else its member record's, else this process's configured one. Milliseconds. */
  private leaseMs(pair: Pair): number {
    const seconds = pair.heartbeat?.stored?.record.leaseDurationSeconds ?? pair.member?.stored?.record.leaseDurationSeconds;
    return seconds !== undefined ? seconds * 1000 : this.options.member.leaseDurationMs;
  }

  /**
   * When a pair is due, by the one rule ({@link judgeExpiry}) over both its
   * records' sights: its member expires a lease after either record last
   * changed, its orphan heartbeat goes a lease after it was first seen alone,
   * never counting from before this term; a half-done reaping is due at once.
   */
  private expiry(pair: Pair): Expiry {
    const { cache, clock } = this.options;
    const sights = [cache.sight(memberKey(this.role, pair.id)), cache.sight(heartbeatKey(this.role, pair.id))];
    if (pair.member?.stored && isMarked(pair.member.stored.record)) return judgeExpiry(0, [this.startedAt], sights, clock.now());
    const seen = pair.member ? [pair.member.observedAt, pair.heartbeat?.observedAt ?? -Infinity] : [pair.orphanSince!];
    return judgeExpiry(this.leaseMs(pair), [this.startedAt, ...seen], sights, clock.now());
  }

  /** Sets the pair's timer: when it is due, at least `atLeastMs` from now; none while a watch is blind (onLive re-arms). */
  private arm(pair: Pair, atLeastMs = 0): void {
    pair.timer?.cancel();
    pair.timer = undefined;
    // A pod-mode member (a cluster switching to `pod`) has no heartbeat record: it goes with its pod, never by a lease.
    if (this.closed || pair.acting || (pair.member && podUidOf(pair.member) !== undefined)) return;
    const expiry = this.expiry(pair);
    if (!expiry.live) return;
    pair.timer = this.options.clock.setTimeout(() => this.act(pair), Math.max(atLeastMs, expiry.dueInMs ?? 0));
  }

  private act(pair: Pair): void {
    if (this.closed || this.pairs.get(pair.id) !== pair) return;
    const expiry = this.expiry(pair);
    // While a watch is down, an unseen heartbeat is our blindness: decided once it is back (onLive re-arms).
    if (!expiry.live) return;
    if (!expiry.expired) return this.arm(pair);
    pair.acting = true;
    // The watch brings what the writes changed, and re-arms; the retry delay is the fallback.
    this.reap(pair).then(
      () => {
        pair.acting = false;
        if (this.pairs.get(pair.id) === pair) this.arm(pair, this.retryMs);
      },
      (err: unknown) => {
        pair.acting = false;
        this.options.logger.debug({ err, role: this.role, id: pair.id }, '[rollcall] could not reap a member; trying again');
        if (this.pairs.get(pair.id) === pair) this.arm(pair, this.retryMs);
      },
    );
  }

  /** Removes an expired member, or what a half-done announce, withdraw or reaping left. */
  private async reap(pair: Pair): Promise<void> {
    const { store, clock } = this.options;
    const mKey = memberKey(this.role, pair.id);
    const hKey = heartbeatKey(this.role, pair.id);
    const member = pair.member;
    if (member && !(member.stored && isMarked(member.stored.record))) {
      // The heartbeat first, by compare-and-set: success proves the member did not renew, and stops a late renewal.
      if (pair.heartbeat) {
        const heartbeat = pair.heartbeat;
        if ((await confirmByWrite(() => store.delete(hKey, heartbeat.version))) !== 'confirmed') return; // it renewed
      } else if (await store.get(hKey)) {
        return; // our view is behind: its heartbeat is on the way
      }
      const record = member.stored?.record;
      if (!record) return void (await confirmByWrite(() => store.delete(mKey, member.version)));
      // Readers learn the reason from the mark; changed or gone: it wrote again (alive) or withdrew.
      if ((await markAndDelete(store, mKey, member.version, record, clock.wallNow())) === 'confirmed') {
        this.options.logger.info({ role: this.role, id: pair.id }, '[rollcall] member expired: no heartbeat within its lease');
      }
      return;
    }
    // A reaping left half done, or a heartbeat alone: delete what is left; a live member then announces again.
    if (member) await confirmByWrite(() => store.delete(mKey, member.version));
    await deleteRecord(store, hKey, pair.heartbeat);
  }
}
