import type { Clock, Timer } from './clock.js';
import { LeaseLostError } from './errors.js';

/** Why an announced member's incarnation ended, other than its own withdraw. */
export type MemberLossReason =
  /** No heartbeat succeeded within `registry.member.renewDeadlineMs` of the send of the last one: stopped before any peer may report it removed. */
  | 'renew-deadline'
  /** A write found its record gone: deleted by someone else (an operator, a backend's own expiry), or by a peer or reaper while this process was paused. */
  | 'deleted'
  /** A write found its record written by someone else: a peer's or a reaper's expiry mark. */
  | 'taken'
  /** A later incarnation of the same id holds its record (a successor announced under this id, e.g. in a rolling update): never announced again, which would fight it. */
  | 'superseded'
  /** Pod liveness: its own readiness probe went unanswered (a pause, a hang) longer than the kubelet allows before marking the pod not Ready, so peers may have removed it. */
  | 'probe-missed';

/**
 * One incarnation of an announced member judged by its own clock, as a
 * leadership term is (`LeaseHolder`): alive while the monotonic clock reads
 * before the send time of its last successful renewal plus the renew
 * deadline, read on every access, so a process resumed from a pause reads
 * `alive` false before its overdue timer has run. The timer only announces the
 * loss (`onLost`, once). A keeper that renews nothing (a member in a Ready pod)
 * has no deadline: only a write that finds its record gone or taken ends it.
 * @internal
 */
export class MemberValidity {
  private renewedAt: number;
  private lostReason: MemberLossReason | undefined;
  private ended = false;
  private timer: Timer | undefined;
  private readonly controller = new AbortController();

  constructor(
    private readonly clock: Clock,
    /** Milliseconds after a renewal's send; undefined: no deadline. */
    private readonly renewDeadlineMs: number | undefined,
    /** Send time (monotonic) of the write that created the incarnation. */
    sentAt: number,
    private readonly onLost: (reason: MemberLossReason) => void,
    /** A second bound (monotonic ms), read on every access: past it the incarnation is lost for `probe-missed`; undefined: none now. */
    private readonly vouchedUntil: () => number | undefined = () => undefined,
  ) {
    this.renewedAt = sentAt;
    this.arm();
  }

  /** Whether the incarnation may act as a member now, by the clock at this moment. */
  get alive(): boolean {
    if (this.ended) return false;
    return this.passed() === undefined;
  }

  /** Which bound the clock has reached, if any. */
  private passed(): MemberLossReason | undefined {
    const now = this.clock.now();
    if (this.renewDeadlineMs !== undefined && now >= this.renewedAt + this.renewDeadlineMs) return 'renew-deadline';
    const vouched = this.vouchedUntil();
    return vouched !== undefined && now >= vouched ? 'probe-missed' : undefined;
  }

  /** Aborted when the incarnation ends, lost or withdrawn; its reason a LEASE_LOST error naming why. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why it was lost; undefined while alive or after a withdraw. */
  get reason(): MemberLossReason | undefined {
    return this.lostReason;
  }

  /** A renewal sent at `sentAt` (monotonic) succeeded. A late success after the loss changes nothing. */
  renewed(sentAt: number): void {
    if (this.ended || !this.alive) return;
    if (sentAt <= this.renewedAt) return;
    this.renewedAt = sentAt;
    this.arm();
  }

  /** Ends the incarnation for `reason`: the signal aborts, then `onLost` runs. Once; no-op once ended. */
  lose(reason: MemberLossReason): void {
    if (this.ended) return;
    this.ended = true;
    this.lostReason = reason;
    this.timer?.cancel();
    this.controller.abort(new LeaseLostError(reason, `member incarnation lost: ${reason}`));
    this.onLost(reason);
  }

  /** Ends it without a loss (withdraw, close): the signal aborts, nothing is announced. Idempotent. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.timer?.cancel();
    this.controller.abort(new LeaseLostError('withdrawn', 'member withdrawn'));
  }

  /** One timer at the earliest bound; when it fires early (the second bound moved on), it re-arms. */
  private arm(): void {
    this.timer?.cancel();
    this.timer = undefined;
    if (this.ended) return;
    const bounds = [this.renewDeadlineMs === undefined ? undefined : this.renewedAt + this.renewDeadlineMs, this.vouchedUntil()].filter((b): b is number => b !== undefined);
    // no bound now: a second bound that appears later (a first probe answer) is armed by the next renewal or `recheck`
    if (bounds.length === 0) return;
    this.timer = this.clock.setTimeout(() => {
      const reason = this.passed();
      if (reason) this.lose(reason);
      else this.arm();
    }, Math.min(...bounds) - this.clock.now());
  }

  /** The second bound may have moved (a probe answered): arm the timer for it if none runs. */
  recheck(): void {
    if (!this.ended && this.timer === undefined) this.arm();
  }
}
