import { deleteRecord } from './delete-record.js';
import { confirmByWrite } from './expiry.js';
import { HeartbeatPairs, type HeartbeatPair } from './heartbeat-pairs.js';
import type { LeaseHolder } from './lease-holder.js';
import type { LivenessContext, LivenessStrategy, MemberKeeping } from './liveness-strategy.js';
import { isMarked, markAndDelete } from './member-mark.js';
import { electionKey, heartbeatKey, memberKey, reaperElection } from './record-key.js';

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
    private readonly options: LivenessContext,
  ) {
    this.pairs = new HeartbeatPairs(role, options, { due: (pair) => this.reap(pair) });
  }

  close(): void {
    this.pairs.close();
  }

  /** Removes an expired member, or what a half-done announce, withdraw or reaping left. */
  private async reap(pair: HeartbeatPair): Promise<void> {
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
