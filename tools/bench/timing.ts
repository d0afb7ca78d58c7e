import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Election and lock timings of the handover, failover and lock scenarios, on
 * every backend and for client-go alike: short, so a crash failover (which
 * must wait out the lease) takes about 2 s. The idle request counts use each
 * backend's defaults instead (15 s / 10 s / 2 s; member heartbeat 5 s).
 */
export const BENCH_TIMING = { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 } as const;

/** The same timings as client-go's flags. */
export const BENCH_TIMING_GO = { leaseDuration: '2s', renewDeadline: '1.5s', retryPeriod: '300ms' } as const;

/** Bound on any one wait of a scenario (an election, an event), milliseconds. */
export const WAIT_BOUND_MS = 30_000;

/**
 * A pause uniform between 50 and 450 ms before each measured step, longer than
 * the slowest poll (mysql 200 ms, client-go's retry period 300 ms): each round
 * starts at a random phase of every poller and timer, so the percentiles are
 * those of the poll, not of one lucky or unlucky phase.
 */
export function dephase(): Promise<void> {
  return delay(50 + Math.random() * 400);
}

/** A fresh cluster name per scenario, so no run sees another's records. */
export function benchCluster(purpose: string): string {
  return `bench-${purpose}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

/** Resolves with performance.now() at the moment `promise` resolves. */
export function timeOf(promise: Promise<unknown>): Promise<number> {
  return promise.then(() => performance.now());
}
