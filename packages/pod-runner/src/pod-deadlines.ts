import type { PendingCause, TaskPhase } from '@rollcall/pod-runner-activity';
import { FATAL_WAITING, justUngated, readDeleted, readPod } from './pod-status.js';
import type { Pod } from './pod.js';
import { DEFAULT_UNKNOWN_TIMEOUT_MS, type TaskStatus, type TaskTimeouts } from './task.js';

/** A terminal status change. */
export type EndChange = Partial<TaskStatus> & { phase: TaskPhase };

/**
 * What the pod of a task's current attempt says, with the deadline its state
 * runs against (wall-clock ms, from the pod's own timestamps, so a new term
 * resumes it without a stored timer):
 * - `ended`: the attempt ended (`change` is its terminal status);
 * - `running`: `deadline` is the run timeout's;
 * - `unknown`: its node stopped reporting; `deadline` is the unknown bound's;
 * - `pending`: `deadline` is the earliest of the start, the cause's own and the gated bound.
 */
export type PodVerdict =
  | { kind: 'ended'; change: EndChange }
  | { kind: 'running'; change: Partial<TaskStatus>; deadline?: number }
  | { kind: 'unknown'; change: Partial<TaskStatus>; deadline: number }
  | { kind: 'pending'; change: Partial<TaskStatus>; cause: PendingCause; deadline?: number };

/**
 * When the pod's node was seen silent: the Ready condition's transition to not
 * True (the node lifecycle controller marks the pods of an unreachable node), else
 * `fallback` (when this term first saw phase Unknown).
 */
export function unknownSince(pod: Pod, fallback: number): number {
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready' && c.status !== 'True');
  const at = ready?.lastTransitionTime ? Date.parse(ready.lastTransitionTime) : NaN;
  return Number.isNaN(at) ? fallback : at;
}

/**
 * Reads the current attempt's pod (the port of reconcile.ts). `last` is the
 * status this term published before (its `ungatedAt` and pending cause tell an
 * ungating); `seenUnknown` when this term first saw phase Unknown.
 */
export function readAttemptPod(pod: Pod, last: Pick<TaskStatus, 'submittedAt' | 'ungatedAt' | 'pendingCause'>, timeouts: TaskTimeouts, now: number, seenUnknown = now): PodVerdict {
  const wallNow = new Date(now);
  const reading = readPod(pod, wallNow);
  // a sync reads the pod as it is now: one last seen gated may be past its scheduling already, ungated meanwhile
  const ungatedNow = last.ungatedAt === undefined && last.pendingCause === 'gated' ? { ungatedAt: wallNow.toISOString() } : {};
  // deleted behind the runner's back: lost, unless it ended before the delete (readDeleted)
  const deleted = readDeleted(pod, reading);
  if (deleted) return { kind: 'ended', change: deleted };
  if (reading.phase === 'unknown') {
    const change = { phase: 'unknown' as const, pendingCause: undefined, reason: reading.reason, message: reading.message };
    return { kind: 'unknown', change, deadline: unknownSince(pod, seenUnknown) + (timeouts.unknown ?? DEFAULT_UNKNOWN_TIMEOUT_MS) };
  }
  if (reading.phase === 'running') {
    const change = { phase: 'running' as const, pendingCause: undefined, reason: undefined, message: undefined, startedAt: reading.startedAt, ...ungatedNow };
    return { kind: 'running', change, deadline: timeouts.run === undefined ? undefined : Date.parse(reading.startedAt) + timeouts.run };
  }
  if (reading.phase !== 'pending') return { kind: 'ended', change: { ...reading, ...ungatedNow } };
  if (reading.reason && FATAL_WAITING.has(reading.reason)) return { kind: 'ended', change: { phase: 'failed', reason: reading.reason, message: reading.message } };
  const gated = reading.cause === 'gated';
  // the gates' removal is seen when the cause leaves `gated` (or, taking over, while the scheduler has not looked yet)
  const ungatedAt = gated ? undefined : (last.ungatedAt ?? (last.pendingCause === 'gated' || justUngated(pod) ? wallNow.toISOString() : undefined));
  const change = { phase: 'pending' as const, pendingCause: reading.cause, reason: reading.reason, message: reading.message, ...(ungatedAt ? { ungatedAt } : {}) };
  // the start timeout counts from the pod's creation (from its ungating, if it was gated) and not while gated; a cause's own from when that cause began
  const created = Date.parse(pod.metadata.creationTimestamp ?? last.submittedAt);
  const causeTimeout = reading.cause === 'unschedulable' ? timeouts.unschedulable : reading.cause === 'image-pull' ? timeouts.imagePull : gated ? timeouts.gated : undefined;
  const bounds: number[] = [];
  if (timeouts.start !== undefined && !gated) bounds.push((ungatedAt ? Date.parse(ungatedAt) : created) + timeouts.start);
  // PodScheduled keeps the gated condition's transition time when the scheduler finds the pod Unschedulable: a cause begins at the ungating at the earliest
  if (causeTimeout !== undefined) bounds.push(Math.max(Date.parse(reading.since), ungatedAt ? Date.parse(ungatedAt) : -Infinity) + causeTimeout);
  return { kind: 'pending', change, cause: reading.cause, deadline: bounds.length === 0 ? undefined : Math.min(...bounds) };
}

/** The status of a task pending past its deadline (`podEvents`: the pod's last events). */
export function pendingTimedOut(status: Pick<TaskStatus, 'reason' | 'message'>, cause: PendingCause, podEvents: string[]): EndChange {
  const reason = status.reason ?? (cause === 'unschedulable' ? 'Unschedulable' : 'PendingTimeout');
  return { phase: 'timed-out', reason, message: `pending (${cause}) past its timeout${status.message ? `: ${status.message}` : ''}`, podEvents };
}

/** The status of a task running past its run timeout: `RunTimeout`, apart from the kubelet's `DeadlineExceeded`. */
export function runTimedOut(timeouts: TaskTimeouts): EndChange {
  return { phase: 'timed-out', reason: 'RunTimeout', message: `ran longer than its run timeout of ${timeouts.run} ms` };
}

/** The status of a task whose pod stayed in phase Unknown past its bound. */
export function unknownTimedOut(status: Pick<TaskStatus, 'message'>, timeouts: TaskTimeouts): EndChange {
  return { phase: 'lost', reason: 'NodeLost', message: `the pod's node stopped reporting for ${timeouts.unknown ?? DEFAULT_UNKNOWN_TIMEOUT_MS} ms${status.message ? `: ${status.message}` : ''}` };
}

/** The status of a task that waited in the queue past its bound, never admitted. */
export function queueTimedOut(status: Pick<TaskStatus, 'message'>, timeouts: TaskTimeouts): EndChange {
  const last = status.message?.startsWith('requeued: ') ? `; the last refusal: ${status.message.slice('requeued: '.length)}` : '';
  return { phase: 'timed-out', reason: 'QueueTimeout', message: `waited in the queue ${timeouts.queue} ms and was never admitted (no capacity or quota)${last}` };
}
