import type { Timer } from './clock.js';
import type { RecordLiveness } from './lease-record.js';
import type { KeptMember, LivenessStrategy, MemberKeeper, Verdict } from './member-liveness.js';

/**
 * Keeps a member alive by heartbeats: every `heartbeatIntervalMs` (on the
 * injected clock) it renews, after the write in flight. In the `heartbeat`
 * mode a renewal rewrites the member record with the current payload, which
 * announces the member again if its record vanished; a mode that renews
 * another record overrides {@link announce}, {@link renew} and {@link withdrawn}.
 * @internal
 */
export class HeartbeatKeeper implements MemberKeeper {
  readonly liveness: RecordLiveness = { mode: 'heartbeat' };
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
  protected renew(): Promise<void> {
    return this.member.writeMember();
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
 * The `heartbeat` mode: every heartbeat rewrites the member record, so every
 * reader of the role receives it and judges its lease itself; of the readers
 * that see a member expire, the one whose compare-and-set mark lands deletes
 * it (the member directory's {@link LivenessJudge} with the registry's confirm policy).
 * @internal
 */
export class HeartbeatLiveness implements LivenessStrategy {
  readonly mode = 'heartbeat' as const;

  keep(member: KeptMember): MemberKeeper {
    return new HeartbeatKeeper(member);
  }

  verdict(): Verdict {
    return 'lease';
  }

  reading(): void {}

  close(): void {}
}
