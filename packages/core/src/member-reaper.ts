import type { Clock, Timer } from './clock.js';
import { ErrorCode, hasCode } from './errors.js';
import type { LeaseHolder } from './lease-holder.js';
import type { Logger } from './logger.js';
import { isReaped } from './member-liveness.js';
import type { MonitoredStore } from './monitored-store.js';
import { electionKey, HEARTBEAT_PREFIX, heartbeatKey, MEMBER_PREFIX, memberKey, reaperElection } from './record-key.js';
import type { RecordKey } from './store.js';
import type { CacheChange, CacheEntry, Claim, WatchCache } from './watch-cache.js';

/** @internal */
export interface MemberReaperOptions {
  cache: WatchCache;
  store: MonitoredStore;
  clock: Clock;
  logger: Logger;
  /** A started-by-the-caller holder of an election's lease: the registry's, so a lost connection and close() reach it. */
  holder: (key: RecordKey) => LeaseHolder;
  /** The member lease to assume for a record that carries none it can read. Milliseconds. */
  leaseDurationMs: number;
  /** Delay before trying again when the backend could not answer. Milliseconds. */
  retryMs: number;
}

/**
 * The `reaper` liveness mode's reapers: for each role this process reads, a
 * campaign for that role's reaper election (`rollcall-reaper.<role>`); while
 * it leads, this process watches the role's heartbeat records and removes
 * the members whose heartbeat has stopped.
 * @internal
 */
export class MemberReaper {
  private readonly roles = new Map<string, RoleReaper>();

  constructor(private readonly options: MemberReaperOptions) {}

  /** Campaigns to reap `role`'s members, from now until close. Idempotent. */
  campaign(role: string): void {
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
    private readonly options: MemberReaperOptions,
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
    private readonly options: MemberReaperOptions,
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

  /** The lease a pair is judged by: its heartbeat's, else its member record's, else this process's configured one. Milliseconds. */
  private leaseMs(pair: Pair): number {
    const seconds = pair.heartbeat?.stored?.record.leaseDurationSeconds ?? pair.member?.stored?.record.leaseDurationSeconds;
    return seconds !== undefined ? seconds * 1000 : this.options.leaseDurationMs;
  }

  /** Monotonic time at which the pair is due: when its member expires, its orphan heartbeat goes, or at once for a half-done reaping. */
  private dueAt(pair: Pair): number {
    const { cache } = this.options;
    if (pair.member?.stored && isReaped(pair.member.stored.record)) return this.options.clock.now();
    const seen = Math.max(
      this.startedAt,
      cache.sight(memberKey(this.role, pair.id)).liveSince,
      cache.sight(heartbeatKey(this.role, pair.id)).liveSince,
      ...(pair.member ? [pair.member.observedAt, pair.heartbeat?.observedAt ?? -Infinity] : [pair.orphanSince!]),
    );
    return seen + this.leaseMs(pair);
  }

  private arm(pair: Pair, atLeastMs = 0): void {
    pair.timer?.cancel();
    if (this.closed || pair.acting) return;
    const delay = Math.max(atLeastMs, this.dueAt(pair) - this.options.clock.now());
    pair.timer = this.options.clock.setTimeout(() => this.act(pair), delay);
  }

  private act(pair: Pair): void {
    const { cache } = this.options;
    if (this.closed || this.pairs.get(pair.id) !== pair) return;
    // While a watch is down, an unseen heartbeat is our blindness: decided once it is back (onLive re-arms).
    if (!cache.sight(memberKey(this.role, pair.id)).live || !cache.sight(heartbeatKey(this.role, pair.id)).live) return;
    if (this.dueAt(pair) > this.options.clock.now()) return this.arm(pair);
    pair.acting = true;
    // The watch brings what the writes changed, and re-arms; the retry delay is the fallback.
    this.reap(pair).then(
      () => {
        pair.acting = false;
        if (this.pairs.get(pair.id) === pair) this.arm(pair, this.options.retryMs);
      },
      (err: unknown) => {
        pair.acting = false;
        this.options.logger.debug({ err, role: this.role, id: pair.id }, '[rollcall] could not reap a member; trying again');
        if (this.pairs.get(pair.id) === pair) this.arm(pair, this.options.retryMs);
      },
    );
  }

  /** Removes an expired member, or what a half-done announce, withdraw or reaping left. */
  private async reap(pair: Pair): Promise<void> {
    const { store } = this.options;
    const mKey = memberKey(this.role, pair.id);
    const hKey = heartbeatKey(this.role, pair.id);
    const member = pair.member;
    if (member && !(member.stored && isReaped(member.stored.record))) {
      // The heartbeat first, by compare-and-set: success proves the member did not renew, and stops a late renewal.
      if (pair.heartbeat) {
        if (!(await settled(store.delete(hKey, pair.heartbeat.version)))) return; // it renewed
      } else if (await store.get(hKey)) {
        return; // our view is behind: its heartbeat is on the way
      }
      const record = member.stored?.record;
      if (!record) return void (await settled(store.delete(mKey, member.version)));
      let marked;
      try {
        marked = await store.update(mKey, { ...record, holderIdentity: '' }, member.version);
      } catch (err) {
        if (hasCode(err, ErrorCode.CONFLICT, ErrorCode.NOT_FOUND)) return; // it wrote again: alive, or withdrawn
        throw err;
      }
      this.options.logger.info({ role: this.role, id: pair.id }, '[rollcall] member expired: no heartbeat within its lease');
      await settled(store.delete(mKey, marked.version));
      return;
    }
    // A reaping left half done, or a heartbeat alone: delete what is left; a live member then announces again.
    if (member) await settled(store.delete(mKey, member.version));
    await deleteWhatever(store, hKey, pair.heartbeat?.version);
  }
}

/** Runs a compare-and-set write; true when it succeeded, false on CONFLICT or NOT_FOUND (the record moved on). */
async function settled(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return true;
  } catch (err) {
    if (hasCode(err, ErrorCode.CONFLICT, ErrorCode.NOT_FOUND)) return false;
    throw err;
  }
}

/** Deletes `key` whatever its version (re-read on CONFLICT), a few attempts. */
async function deleteWhatever(store: MonitoredStore, key: RecordKey, version: string | undefined): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const current = version ?? (await store.get(key))?.version;
    if (current === undefined) return;
    try {
      await store.delete(key, current);
      return;
    } catch (err) {
      if (hasCode(err, ErrorCode.NOT_FOUND)) return;
      if (!hasCode(err, ErrorCode.CONFLICT)) throw err;
      version = undefined;
    }
  }
}
