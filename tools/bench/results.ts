import type { Summary } from '../testenv/measure/stats.js';

/** A figure a backend cannot give, with the reason (shown under the table). */
export interface NotApplicable {
  na: string;
}

export type Figure<T> = T | NotApplicable;

export function isNotApplicable<T>(figure: Figure<T>): figure is NotApplicable {
  return typeof figure === 'object' && figure !== null && 'na' in figure;
}

/** Lock operations among the contenders. */
export interface LockResult {
  /** lock() + release() cycles per second, all contenders together. */
  opsPerSecond: number;
  /** From a lock() call to holding the lock, queueing behind the others included. */
  wait: Summary;
  /** From a release() to the next holder's lock() returning: the hand-off itself. */
  handoff: Summary;
  /** Cycles each contender completed (fairness). */
  perContender: number[];
}

/** The idle processes whose requests are counted, in the table's order. */
export const IDLE_ROLES = ['registry', 'member', 'leader', 'follower'] as const;
export type IdleRole = (typeof IDLE_ROLES)[number];

/** Requests one idle process sent, per minute. */
export interface RoleRequests {
  perMinute: number;
  /** The same by verb, RPC or statement kind, per minute; absent where the server does not tell them apart. */
  byMethod?: Record<string, number>;
}

export interface IdleRequests {
  /** What counted them, e.g. "the API server's audit log, one service account per role". */
  source: string;
  roles: Record<IdleRole, Figure<RoleRequests>>;
}

/** One row of the table: one backend (or the reference elector) and every figure. */
export interface BenchRow {
  backend: string;
  handover: Figure<Summary>;
  failover: Figure<Summary>;
  announce: Figure<Summary>;
  lock: Figure<LockResult>;
  requests: Figure<IdleRequests>;
}
