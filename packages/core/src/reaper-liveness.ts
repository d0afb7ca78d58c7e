import { deleteRecord } from './delete-record.js';
import { confirmByRead, confirmByWrite, type Confirmation } from './expiry.js';
import type { LeaseHolder } from './lease-holder.js';
import { parseTime, type RecordLiveness } from './lease-record.js';
import { HeartbeatKeeper } from './heartbeat-liveness.js';
import { HeartbeatPairs, type HeartbeatPair } from './heartbeat-pairs.js';
import { isMarked, markAndDelete } from './liveness-judge.js';
import { declaredLiveness, type KeptMember, type LivenessContext, type LivenessStrategy, type MemberKeeper, type OwnRecord, type RecordJudging, type Verdict } from './member-liveness.js';
import { electionKey, heartbeatKey, memberKey, parseKey, reaperElection } from './record-key.js';
import type { CacheEntry } from './watch-cache.js';

/**
 * The `reaper` liveness mode: the member record `member/<role>/<id>` is
 * written only on announce, payload change and withdraw; heartbeats renew
 * `heartbeat/<role>/<id>`. For each role this process reads that has a member,
 * it campaigns for that role's reaper election (`rollcall-reaper.<role>`);
 * while it leads, it judges the role's pairs of records ({@link HeartbeatPairs})
 * and removes the members whose heartbeat has stopped ({@link ReapTerm}).
 * Readers judge no lease: a member is present until the reaper removes it.
 *
 * A registry that writes nothing (`registry.readOnly`: no `holder`) campaigns
 * for nothing and deletes nothing, but judges each role it reads as a reaper
 * would, confirming by a read ({@link RoleReader}): a member whose heartbeat
 * ran out is reported `removed` (`expired`) before (or without) a reaper's
 * delete, and a heartbeat after that brings it back.
 * @internal
 */
export class ReaperLiveness implements LivenessStrategy {
  readonly mode = 'reaper' as const;
  private readonly reapers = new Map<string, RoleReaper>();
  /** Without a holder (writing nothing): the roles judged by reading. */
  private readonly records: ReaperRecords | undefined;

  constructor(private readonly context: LivenessContext) {
    if (!context.holder) this.records = new ReaperRecords(context);
  }

  keep(member: KeptMember): MemberKeeper {
    return new ReaperKeeper(member);
  }

  /** A record that declares heartbeats is judged by its lease, as in the `heartbeat` mode; any other is present until the reaper removes it (or, reading, by its heartbeat record). */
  verdict(entry: CacheEntry): Verdict {
    if (declaredLiveness(entry) === 'heartbeat') return 'lease';
    return this.records ? this.records.verdict(entry) : 'present';
  }

  /** Campaigns to reap `role`'s members (or, writing nothing, judges them), from now until close. Idempotent. */
  reading(role: string): void {
    const { holder } = this.context;
    if (!holder) return this.records!.read(role);
    if (!this.reapers.has(role)) this.reapers.set(role, new RoleReaper(role, this.context, holder));
  }

  async ready(role: string): Promise<void> {
    await this.records?.ready(role);
  }

  /** A reader's members' renewTime is their last heartbeat's. */
  lastHeartbeat(role: string, id: string): Date | undefined {
    return this.records?.lastHeartbeat(role, id);
  }

  close(): void {
    this.reapers.forEach((r) => r.close());
    this.reapers.clear();
    this.records?.close();
  }
}

/**
 * How a process that does not reap judges the records of `reaper`-mode
 * members: a registry that writes nothing, or a reader of another mode (a
 * cluster switching modes). Each role with such a member is judged as a
 * reaper would ({@link RoleReader}): its heartbeat records are read, and a
 * member whose heartbeat ran out — confirmed by a read — is reported `removed`
 * (`expired`) until it writes again. It deletes nothing.
 * @internal
 */
export class ReaperRecords implements RecordJudging {
  private readonly roles = new Map<string, RoleReader>();
  private readonly starting = new Set<string>();

  constructor(private readonly context: LivenessContext) {}

  verdict(entry: CacheEntry): Verdict {
    const key = parseKey(entry.key);
    if (key?.kind !== 'member') return 'present';
    this.read(key.role!);
    return this.roles.get(key.role!)?.expired(key.id!) ? 'absent' : 'present';
  }

  /** Starts judging `role`. Idempotent. */
  read(role: string): void {
    if (this.roles.has(role) || this.starting.has(role)) return;
    // Its pairs report what is already listed while it starts, and each report asks for a verdict again.
    this.starting.add(role);
    try {
      this.roles.set(role, new RoleReader(role, this.context));
    } finally {
      this.starting.delete(role);
    }
  }

  async ready(role: string): Promise<void> {
    await this.roles.get(role)?.pairs.ready();
  }

  lastHeartbeat(role: string, id: string): Date | undefined {
    const heartbeat = this.roles.get(role)?.pairs.get(id)?.heartbeat?.stored?.record;
    return heartbeat ? parseTime(heartbeat.renewTime) : undefined;
  }

  close(): void {
    this.roles.forEach((r) => r.close());
    this.roles.clear();
  }
}

/**
 * Announces the member record, then the heartbeat record; each heartbeat
 * renews the heartbeat record — the record the reaper judges, so the renew
 * deadline counts from its send. Finding it gone (the reaper expired this
 * member while it was cut off or paused) loses the member, never re-created.
 */
class ReaperKeeper extends HeartbeatKeeper {
  override readonly liveness: RecordLiveness = { mode: 'reaper' };
  private readonly beatRecord: OwnRecord;

  constructor(member: KeptMember) {
    super(member);
    this.beatRecord = member.own(heartbeatKey(member.role, member.id));
  }

  protected override async announce(): Promise<void> {
    await this.member.writeMember();
    try {
      this.member.renewed(await this.beatRecord.put());
    } catch (err) {
      // Announce nothing: a member record without a heartbeat would be reaped a lease later anyway.
      await this.member.deleteMember().catch(() => {});
      throw err;
    }
  }

  protected override async renew(): Promise<void> {
    this.member.renewed(await this.beatRecord.put());
  }

  /** A heartbeat record left by a crash here is the reaper's to delete. */
  override async withdrawn(): Promise<void> {
    await this.beatRecord.delete();
  }
}

/** Campaigns to reap one role; each term as its reaper is a {@link ReapTerm}. */
class RoleReaper {
  private readonly holder: LeaseHolder;
  private term: ReapTerm | undefined;

  constructor(
    readonly role: string,
    private readonly context: LivenessContext,
    holder: (key: string) => LeaseHolder,
  ) {
    this.holder = holder(electionKey(reaperElection(role)));
    this.holder.on('acquired', () => {
      context.logger.info({ role }, '[rollcall] reaping this role');
      this.term ??= new ReapTerm(role, context);
    });
    this.holder.on('lost', () => this.endTerm());
    this.holder.on('failed', ({ error }) => context.logger.warn({ err: error, role }, '[rollcall] cannot campaign to reap this role'));
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
 * One term as a role's reaper: over the role's pairs ({@link HeartbeatPairs},
 * judged from the start of this term), it removes each expired member. It
 * deletes the heartbeat record (compare-and-set: a heartbeat meanwhile keeps
 * the member), marks the member record expired (compare-and-set on the version
 * it saw: readers report `removed`, reason `expired`, with the last data) and
 * deletes it.
 *
 * The two half-written states end consistent: a member record without a
 * heartbeat record (a crash between the two writes of an announce) expires a
 * lease after it was last seen to change; a heartbeat record without a member
 * record (a crash between the two deletes of a withdraw or of a reaping) is
 * deleted a lease after this process first saw it alone, whether or not it is
 * renewed, so a live member finds it gone and announces again.
 */
class ReapTerm {
  private readonly pairs: HeartbeatPairs;

  constructor(
    private readonly role: string,
    private readonly context: LivenessContext,
  ) {
    // Confirmed is done; the watch brings what it deleted, and the judge's retry is the fallback.
    this.pairs = new HeartbeatPairs(role, context, { confirm: (pair) => this.reap(pair) });
  }

  close(): void {
    this.pairs.close();
  }

  /** Removes an expired member, or what a half-done announce, withdraw or reaping left: `changed` when it turned out alive. */
  private async reap(pair: HeartbeatPair): Promise<Confirmation> {
    const { store, clock } = this.context;
    const mKey = memberKey(this.role, pair.id);
    const hKey = heartbeatKey(this.role, pair.id);
    const member = pair.member;
    if (member && !(member.stored && isMarked(member.stored.record))) {
      // The heartbeat first, by compare-and-set: success proves the member did not renew, and stops a late renewal.
      if (pair.heartbeat) {
        const heartbeat = pair.heartbeat;
        if ((await confirmByWrite(() => store.delete(hKey, heartbeat.version))) !== 'confirmed') return 'changed'; // it renewed
      } else if (await store.get(hKey)) {
        return 'changed'; // our view is behind: its heartbeat is on the way
      }
      const record = member.stored?.record;
      if (!record) return confirmByWrite(() => store.delete(mKey, member.version));
      // Readers learn the reason from the mark; changed or gone: it wrote again (alive) or withdrew.
      const confirmation = await markAndDelete(store, mKey, member.version, record, clock.wallNow());
      if (confirmation === 'confirmed') this.context.logger.info({ role: this.role, id: pair.id }, '[rollcall] member expired: no heartbeat within its lease');
      return confirmation;
    }
    // A reaping left half done, or a heartbeat alone: delete what is left; a live member then announces again.
    if (member) await confirmByWrite(() => store.delete(mKey, member.version));
    await deleteRecord(store, hKey, pair.heartbeat);
    return 'confirmed';
  }
}

/**
 * A role read by a registry that writes nothing: its pairs judged as a reaper
 * would, each expiry confirmed by a read of the heartbeat record (unchanged or
 * gone). A confirmed member is no longer vouched for until it writes again.
 */
class RoleReader {
  readonly pairs: HeartbeatPairs;
  /** Members judged expired and confirmed, by id: the record versions that were confirmed. */
  private readonly confirmed = new Map<string, { member: string; heartbeat: string | undefined }>();

  constructor(
    private readonly role: string,
    private readonly context: LivenessContext,
  ) {
    this.pairs = new HeartbeatPairs(role, context, {
      confirm: (pair) => (pair.member ? confirmByRead(context.store, heartbeatKey(role, pair.id), pair.heartbeat?.version) : Promise.resolve('confirmed')),
      expired: (pair) => {
        // Not judged again until a record changes.
        this.pairs.forget(pair.id);
        if (!pair.member) return; // a heartbeat alone: no member to report
        this.confirmed.set(pair.id, { member: pair.member.version, heartbeat: pair.heartbeat?.version });
        context.rejudge(memberKey(role, pair.id));
      },
      changed: (id, pair) => {
        const confirmed = this.confirmed.get(id);
        if (!pair || (confirmed && wroteSince(pair, confirmed))) this.confirmed.delete(id);
        // Judged again on every change: its renewTime is its heartbeat's.
        context.rejudge(memberKey(role, id));
      },
    });
  }

  expired(id: string): boolean {
    return this.confirmed.has(id);
  }

  close(): void {
    this.pairs.close();
    this.confirmed.clear();
  }
}

/**
 * Whether the member wrote since its expiry was confirmed at `confirmed`'s
 * versions — a heartbeat, or a new announce — which brings it back; a
 * reaper's deletes and its mark do not.
 */
function wroteSince(pair: HeartbeatPair, confirmed: { member: string; heartbeat: string | undefined }): boolean {
  if (pair.heartbeat && pair.heartbeat.version !== confirmed.heartbeat) return true;
  const record = pair.member?.stored?.record;
  return pair.member !== undefined && pair.member.version !== confirmed.member && record !== undefined && !isMarked(record);
}
