import { ConfigurationError } from '@rollcall/core';
import { BACKEND } from './errors.js';
import type { TaskStatus } from './task.js';

/**
 * The reasons a retry policy may name: an attempt that ended this way says
 * nothing certain against the task itself (its pod was deleted, evicted by the
 * Eviction API or for node pressure, preempted by the scheduler or the kubelet,
 * ended by a graceful node shutdown, deleted by the taint manager or pod GC,
 * its node lost; it ran out of memory or time).
 */
export const RETRYABLE_REASONS = [
  'Deleted',
  'Evicted',
  'Preempted',
  'NodeLost',
  'NodeShutdown',
  'EvictedByKubelet',
  'PreemptedByKubelet',
  'TaintManagerEviction',
  'PodGarbageCollected',
  'TerminatedByKubelet',
  'OOMKilled',
  'DeadlineExceeded',
  'RunTimeout',
] as const;
export type RetryableReason = (typeof RETRYABLE_REASONS)[number];

/** Exit codes of the task container that retry, as Kubernetes' podFailurePolicy `onExitCodes` says them. */
export interface ExitCodeRule {
  /** `In`: these codes retry; `NotIn`: every other non-zero code retries. */
  operator: 'In' | 'NotIn';
  /** 1 to 255, at least one (0 is success and never retries). */
  values: number[];
}

/**
 * A template's retry policy, modelled on a Job's `backoffLimit` and
 * `podFailurePolicy`: an attempt that ends in one of `retryOn`'s outcomes is
 * followed, after a backoff, by the next attempt (a new pod, `<runner>-<id>-<attempt+1>`),
 * until `maxAttempts`. Success, a cancel, a queue or pending timeout and a
 * refused create never retry. Without a policy a task has one attempt.
 */
export interface RetryPolicy {
  /** Attempts in all, the first included: 1 to 100. */
  maxAttempts: number;
  /** Wait before the second attempt; doubles before each one after. Milliseconds. Default 10000. */
  backoffMs?: number;
  /** The longest wait between attempts. Milliseconds. Default 300000 (5 min). */
  maxBackoffMs?: number;
  /** Which outcomes retry: an attempt retries when its reason is listed or its exit code matches. */
  retryOn: {
    reasons?: RetryableReason[];
    exitCodes?: ExitCodeRule;
  };
}

export const DEFAULT_BACKOFF_MS = 10_000;
export const DEFAULT_MAX_BACKOFF_MS = 300_000;

function invalid(key: string, message: string): ConfigurationError {
  return new ConfigurationError(`${key}: ${message}`, { key, backend: BACKEND });
}

const isWholeIn = (value: unknown, min: number, max: number): value is number => Number.isInteger(value) && (value as number) >= min && (value as number) <= max;

/** Rejects a malformed policy with INVALID_CONFIG naming the key (`at`, e.g. `templates[0].retry`) and the rule. */
export function assertRetryPolicy(policy: unknown, at: string): asserts policy is RetryPolicy {
  if (!policy || typeof policy !== 'object' || Array.isArray(policy)) throw invalid(at, 'a retry policy must be an object');
  const p = policy as Record<string, unknown>;
  for (const key of Object.keys(p)) if (!['maxAttempts', 'backoffMs', 'maxBackoffMs', 'retryOn'].includes(key)) throw invalid(`${at}.${key}`, 'not a retry policy field (maxAttempts, backoffMs, maxBackoffMs, retryOn)');
  if (!isWholeIn(p.maxAttempts, 1, 100)) throw invalid(`${at}.maxAttempts`, `${JSON.stringify(p.maxAttempts)} is not valid: a whole number from 1 to 100`);
  for (const key of ['backoffMs', 'maxBackoffMs'] as const) {
    if (p[key] !== undefined && !isWholeIn(p[key], 0, 86_400_000)) throw invalid(`${at}.${key}`, `${JSON.stringify(p[key])} is not valid: whole milliseconds from 0 to 86400000`);
  }
  if ((p.maxBackoffMs as number | undefined) !== undefined && (p.maxBackoffMs as number) < ((p.backoffMs as number | undefined) ?? DEFAULT_BACKOFF_MS)) {
    throw invalid(`${at}.maxBackoffMs`, `${p.maxBackoffMs} is below backoffMs (${(p.backoffMs as number | undefined) ?? DEFAULT_BACKOFF_MS})`);
  }
  const on = p.retryOn as Record<string, unknown> | undefined;
  if (!on || typeof on !== 'object' || Array.isArray(on)) throw invalid(`${at}.retryOn`, 'needed: an object with reasons and/or exitCodes');
  for (const key of Object.keys(on)) if (!['reasons', 'exitCodes'].includes(key)) throw invalid(`${at}.retryOn.${key}`, 'not a retryOn field (reasons, exitCodes)');
  if (on.reasons !== undefined) {
    if (!Array.isArray(on.reasons)) throw invalid(`${at}.retryOn.reasons`, `must be a list of ${RETRYABLE_REASONS.join(', ')}`);
    for (const reason of on.reasons) if (!(RETRYABLE_REASONS as readonly unknown[]).includes(reason)) throw invalid(`${at}.retryOn.reasons`, `${JSON.stringify(reason)} is not a retryable reason (${RETRYABLE_REASONS.join(', ')})`);
  }
  if (on.exitCodes !== undefined) {
    const rule = on.exitCodes as Record<string, unknown>;
    if (!rule || typeof rule !== 'object' || (rule.operator !== 'In' && rule.operator !== 'NotIn')) throw invalid(`${at}.retryOn.exitCodes.operator`, 'must be In or NotIn');
    if (!Array.isArray(rule.values) || rule.values.length === 0 || rule.values.some((v) => !isWholeIn(v, 1, 255))) {
      throw invalid(`${at}.retryOn.exitCodes.values`, `${JSON.stringify(rule.values)} is not valid: a non-empty list of exit codes from 1 to 255 (0 is success)`);
    }
  }
  if (!on.reasons?.length && on.exitCodes === undefined && p.maxAttempts !== 1) throw invalid(`${at}.retryOn`, 'names no outcome: nothing would retry');
}

/** Whether an attempt that ended with `status` is one the policy retries (attempts left aside). */
export function retries(policy: RetryPolicy, status: Pick<TaskStatus, 'phase' | 'reason' | 'exitCode'>): boolean {
  if (status.phase === 'succeeded' || status.phase === 'cancelled') return false;
  if (status.reason !== undefined && (policy.retryOn.reasons as string[] | undefined)?.includes(status.reason)) return true;
  const rule = policy.retryOn.exitCodes;
  // an exit code only of a task container that ran and failed (an init container's is in the message)
  if (!rule || status.phase !== 'failed' || status.exitCode === undefined || status.exitCode === 0) return false;
  return rule.operator === 'In' ? rule.values.includes(status.exitCode) : !rule.values.includes(status.exitCode);
}

/**
 * What follows an attempt that ended with `status`, `retried` retries (not
 * attempts) after the first: another attempt after `delayMs`, or the end.
 */
export function nextAttempt(policy: RetryPolicy | undefined, status: Pick<TaskStatus, 'phase' | 'reason' | 'exitCode'>, retried: number): { retry: false } | { retry: true; delayMs: number } {
  if (!policy || retried + 1 >= policy.maxAttempts || !retries(policy, status)) return { retry: false };
  const base = policy.backoffMs ?? DEFAULT_BACKOFF_MS;
  const max = policy.maxBackoffMs ?? DEFAULT_MAX_BACKOFF_MS;
  return { retry: true, delayMs: Math.min(max, base * 2 ** retried) };
}
