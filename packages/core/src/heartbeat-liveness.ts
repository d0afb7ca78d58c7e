import type { Timer } from './clock.js';
import type { RecordLiveness } from './lease-record.js';
import type { KeptMember, LivenessStrategy, MemberKeeper, RecordJudging, Verdict } from './member-liveness.js';
import type { CacheEntry } from './watch-cache.js';

/**
 * Keeps a member alive by heartbeats: every `heartbeatIntervalMs` (on the
 * injected clock) it renews, after the write in flight, and reports each
 * renewal's send time. In the `heartbeat` mode a renewal rewrites the member
 * record with the current payload; a record found gone or taken loses the
 * member, never written again. A mode that renews another record overrides
 * {@link announce}, {@link renew} and {@link withdrawn}.
 * @internal
 */
export class HeartbeatKeeper implements MemberKeeper {
  readonly liveness: RecordLiveness = { mode: 'heartbeat' };
  get renewDeadlineMs(): number {
    return this.member.timing.renewDeadlineMs;
  }
  private timer: Timer | undefined;
  private stopped = false;

  constructor(protected readonly member: KeptMember) {}

  async start(): Promise<void> {
    await this.announce();
    this.schedule();
  }

  beat(): Promise<void> {
    return this.member.enqueue(() => this.renew());
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  async withdrawn(): Promise<void> {}

  /** The first write(s). */
  protected async announce(): Promise<void> {
    await this.member.writeMember();
  }

  /** One heartbeat. */
  protected async renew(): Promise<void> {
    if (this.stopped) return;
    this.member.renewed(await this.member.writeMember());
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.member.clock.setTimeout(() => {
      if (this.stopped) return;
      this.beat().catch((err: unknown) => this.member.logger.debug({ err, key: this.member.key }, '[rollcall] heartbeat failed'));
      this.schedule();
    }, this.member.timing.heartbeatIntervalMs);
  }
}

/**
 * What the `heartbeat` and `pod` modes' readers share: a member record is judged
 * by its lease, a `reaper`-mode member's (a cluster switching modes) by its
 * heartbeat record, as a reader that does not reap judges it (`ReaperRecords`).
 * A mode adds how it keeps its own members alive.
 * @internal
 */
export abstract class LeaseJudgedLiveness implements LivenessStrategy {
  abstract readonly mode: LivenessStrategy['mode'];
  constructor(
    /** Records of `reaper`-mode members (a cluster switching modes): judged by their heartbeat records. */
    protected readonly reaperRecords: RecordJudging,
  ) {}

  abstract keep(member: KeptMember): MemberKeeper;

  verdict(entry: CacheEntry): Verdict {
    return entry.stored?.record.liveness?.mode === 'reaper' ? this.reaperRecords.verdict(entry) : 'lease';
  }

  ready(role: string): Promise<void> {
    return this.reaperRecords.ready(role);
  }

  lastHeartbeat(role: string, id: string): Date | undefined {
    return this.reaperRecords.lastHeartbeat(role, id);
  }

  reading(): void {}

  close(): void {
    this.reaperRecords.close();
  }
}

/**
 * The `heartbeat` mode: every heartbeat rewrites the member record, so every
 * reader of the role receives it and judges its lease itself; of the readers
 * that see a member expire, the one whose compare-and-set mark lands deletes
 * it (the member directory's {@link LivenessJudge} with the registry's confirm policy).
 * @internal
 */
export class HeartbeatLiveness extends LeaseJudgedLiveness {
  readonly mode = 'heartbeat' as const;

  keep(member: KeptMember): MemberKeeper {
    return new HeartbeatKeeper(member);
  }
}
