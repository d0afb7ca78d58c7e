import type { LeaseInfo, Member } from '@rollcall/core';
import { age, since } from './output.js';

/**
 * STALE: the last renewal is older than the lease, by the writer's renew time
 * against this machine's clock — advisory, since the two clocks may differ. The
 * registry itself judges expiry by its own clock from when it saw each change,
 * which a one-shot command (or a watch that has just started) has not watched
 * long enough to do; every command marks by this one rule.
 */
export function isStale(renewTime: Date | string | null | undefined, leaseMs: number): boolean {
  const ago = since(renewTime);
  return ago !== undefined && ago > leaseMs;
}

/**
 * A member is judged as its record declares its liveness: by its lease (its
 * heartbeat, or in reaper mode its heartbeat record, which core reports as its
 * `renewTime`), else not at all here — a pod member's `renewTime` is its last
 * write, not a heartbeat, and its pod's readiness judges it (`judgedBy`).
 */
export function memberStale(m: Member): boolean {
  return m.judgedBy === undefined && isStale(m.renewTime, m.leaseDurationMs);
}

/** An election or lock whose holder has not renewed within its lease, by this machine's clock. */
export function leaseStale(lease: LeaseInfo): boolean {
  return lease.holder !== undefined && isStale(lease.renewTime, lease.leaseDurationMs);
}

/** The STALE mark of a text line: its age and its lease, so the line reads alone. */
export function staleMark(renewTime: Date | undefined, leaseMs: number): string {
  return `STALE (renewed ${age(since(renewTime))} ago by its writer's clock, lease ${age(leaseMs)})`;
}

/** The note under a table with a STALE entry. */
export const STALE_NOTE = "STALE: last renewal older than its lease by this machine's clock (advisory: the writer's clock may differ)\n";
