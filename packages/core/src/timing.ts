/**
 * Timings of one lease-holding algorithm (elections and locks), client-go's
 * three durations. Construction enforces
 * `leaseDurationMs > renewDeadlineMs > 1.2 × retryPeriodMs`, so a holder that
 * cannot renew gives up before anyone else may take over.
 */
export interface LeaseTiming {
  /** How long others wait, after last seeing the record change, before taking over. Milliseconds, at least 1000; stored rounded up to whole seconds. Default 15000. */
  leaseDurationMs: number;
  /** How long a holder keeps trying to renew before it steps down. Milliseconds. Default 10000. */
  renewDeadlineMs: number;
  /** Interval between renewals, and between fallback acquisition attempts. Milliseconds. Default 2000. */
  retryPeriodMs: number;
}

/**
 * Heartbeat timings of an announced member. Construction enforces
 * `leaseDurationMs >= 2 × heartbeatIntervalMs` and, as for a leader,
 * `leaseDurationMs > renewDeadlineMs > 1.2 × heartbeatIntervalMs`: a member
 * whose heartbeats stop succeeding is `lost` by its own clock before any peer
 * may report it removed.
 */
export interface MemberTiming {
  /** Interval between heartbeats, each of which renews the record and carries the payload. Milliseconds. Default 5000. */
  heartbeatIntervalMs: number;
  /** How long peers wait, after last seeing a heartbeat, before treating the member as gone. Milliseconds, at least 1000. Default 20000. */
  leaseDurationMs: number;
  /**
   * How long after the *send* of its last successful heartbeat a member still
   * counts itself alive (`handle.alive`); past it, it is `lost`. A peer can
   * only have seen that heartbeat at or after its send, and waits a whole
   * `leaseDurationMs` of no change by its own clock, so the member stops first;
   * `leaseDurationMs − renewDeadlineMs` is the margin for clock-rate drift and
   * a late timer. Milliseconds. Default ¾ of `leaseDurationMs` (15000 with the
   * default lease: three heartbeats may fail).
   */
  renewDeadlineMs: number;
}

export const DEFAULT_LEASE_TIMING: Readonly<LeaseTiming> = Object.freeze({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
/** Default bound on each single backend call (`registry.requestTimeoutMs`), milliseconds. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5000;

export const DEFAULT_MEMBER_TIMING: Readonly<MemberTiming> = Object.freeze({ heartbeatIntervalMs: 5_000, leaseDurationMs: 20_000, renewDeadlineMs: 15_000 });

/** A member's renew deadline when none is set: ¾ of its lease, which meets the timing rule whenever `leaseDurationMs >= 2 × heartbeatIntervalMs` does. @internal */
export function defaultMemberRenewDeadline(leaseDurationMs: number): number {
  return Math.floor((leaseDurationMs * 3) / 4);
}

/** A broken timing rule: the key (relative, e.g. `renewDeadlineMs`) and the rule, or undefined when the timing holds. @internal */
export function leaseTimingProblem(t: LeaseTiming): { key: keyof LeaseTiming; rule: string } | undefined {
  if (!(t.retryPeriodMs > 0)) return { key: 'retryPeriodMs', rule: 'retryPeriodMs must be greater than 0' };
  if (!(t.leaseDurationMs >= 1000)) return { key: 'leaseDurationMs', rule: 'leaseDurationMs must be at least 1000' };
  if (!(t.leaseDurationMs > t.renewDeadlineMs)) return { key: 'renewDeadlineMs', rule: `leaseDurationMs (${t.leaseDurationMs}) must be greater than renewDeadlineMs (${t.renewDeadlineMs})` };
  if (!(t.renewDeadlineMs > 1.2 * t.retryPeriodMs)) return { key: 'renewDeadlineMs', rule: `renewDeadlineMs (${t.renewDeadlineMs}) must be greater than 1.2 x retryPeriodMs (${1.2 * t.retryPeriodMs})` };
  return undefined;
}

/** @internal */
export function memberTimingProblem(t: MemberTiming): { key: keyof MemberTiming; rule: string } | undefined {
  if (!(t.heartbeatIntervalMs > 0)) return { key: 'heartbeatIntervalMs', rule: 'heartbeatIntervalMs must be greater than 0' };
  if (!(t.leaseDurationMs >= 1000)) return { key: 'leaseDurationMs', rule: 'leaseDurationMs must be at least 1000' };
  if (!(t.leaseDurationMs >= 2 * t.heartbeatIntervalMs)) return { key: 'leaseDurationMs', rule: `leaseDurationMs (${t.leaseDurationMs}) must be at least 2 x heartbeatIntervalMs (${2 * t.heartbeatIntervalMs})` };
  if (!(t.leaseDurationMs > t.renewDeadlineMs)) return { key: 'renewDeadlineMs', rule: `leaseDurationMs (${t.leaseDurationMs}) must be greater than renewDeadlineMs (${t.renewDeadlineMs})` };
  if (!(t.renewDeadlineMs > 1.2 * t.heartbeatIntervalMs)) return { key: 'renewDeadlineMs', rule: `renewDeadlineMs (${t.renewDeadlineMs}) must be greater than 1.2 x heartbeatIntervalMs (${1.2 * t.heartbeatIntervalMs})` };
  return undefined;
}

/** The bound below which a pod member's own deadline keeps it ahead of the node controller: `node-monitor-grace-period` (50 s) less the kubelet's node lease renew interval (10 s), Kubernetes defaults. Milliseconds. */
export const POD_DEADLINE_BOUND_MS = 40_000;

/** A broken rule of `member.podRenewDeadlineMs` (0 is off). @internal */
export function podDeadlineProblem(t: { podRenewDeadlineMs: number; heartbeatIntervalMs: number }): string | undefined {
  if (t.podRenewDeadlineMs === 0) return undefined;
  if (!(t.podRenewDeadlineMs < POD_DEADLINE_BOUND_MS)) return `podRenewDeadlineMs (${t.podRenewDeadlineMs}) must be below ${POD_DEADLINE_BOUND_MS} (node-monitor-grace-period 50 s less the node lease renew interval 10 s), or 0 (off)`;
  if (!(t.podRenewDeadlineMs > 1.2 * t.heartbeatIntervalMs)) return `podRenewDeadlineMs (${t.podRenewDeadlineMs}) must be greater than 1.2 x heartbeatIntervalMs (${1.2 * t.heartbeatIntervalMs}), or 0 (off)`;
  return undefined;
}

/** The whole seconds a record stores for a duration: rounded up, so observers never wait less than the holder assumes. @internal */
export function toLeaseSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
