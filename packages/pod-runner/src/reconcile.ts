import { FATAL_WAITING, justUngated, readDeleted, readPod } from './pod-status.js';
import { CANCELLED_ANNOTATION, FINALIZER, type Pod } from './pod.js';
import { DEFAULT_UNKNOWN_TIMEOUT_MS, isTerminal, type TaskStatus, type TaskTimeouts } from './task.js';
import type { PendingCause, TaskPhase } from '@rollcall/pod-runner-activity';

/** A terminal status change. */
export type FinishChange = Partial<TaskStatus> & { phase: TaskPhase };

/**
 * What the leading runner does about one pod of one task:
 * - `ignore`: nothing (a pod of another attempt that still runs);
 * - `release-other`: let go a finished (or deleted) pod of another attempt still held by the finalizer;
 * - `release`: the task is recorded already: let its pod go;
 * - `finish`: record the terminal status, then let the pod go;
 * - `run`: the task runs: this status, the pending timer off, a run timer to `runDeadline` (if any);
 * - `wait`: the pod is pending: this status, the pending timer to `pendingDeadline` (none: no timer);
 * - `unknown`: the pod's phase is Unknown (its node stopped reporting): this status, the pending
 *   timer off (a long-running task is not "starting"), the run timer kept, and the unknown timer
 *   to `unknownDeadline` (armed once: the pod carries no timestamp of the change).
 * Deadlines are wall-clock milliseconds from the pod's own timestamps (see pod-time.ts).
 */
export type Decision =
  | { action: 'ignore' }
  | { action: 'release-other' }
  | { action: 'release' }
  | { action: 'finish'; change: FinishChange }
  | { action: 'run'; change: Partial<TaskStatus>; runDeadline?: number }
  | { action: 'wait'; change: Partial<TaskStatus>; pendingDeadline?: { cause: PendingCause; deadline: number } }
  | { action: 'unknown'; change: Partial<TaskStatus>; unknownDeadline: number };

/** The task as the reconciler sees it. */
export interface ReconcileTask {
  status: TaskStatus;
  timeouts: TaskTimeouts;
}

/**
 * The leader's decision for a task and the latest state of a pod with its id:
 * a pure function of its arguments (`wallNow` stands in for a timestamp the pod
 * lacks), so every branch is tested without a server or a timer.
 */
export function reconcile(task: ReconcileTask, pod: Pod, wallNow: Date): Decision {
  const { status, timeouts } = task;
  if (status.podName !== pod.metadata.name) {
    const reading = readPod(pod, wallNow);
    // finished, or being deleted (an attempt a retry replaced): nothing left to read from it
    const done = (reading.phase !== 'pending' && reading.phase !== 'running' && reading.phase !== 'unknown') || pod.metadata.deletionTimestamp !== undefined;
    return pod.metadata.finalizers?.includes(FINALIZER) && done ? { action: 'release-other' } : { action: 'ignore' };
  }
  if (isTerminal(status)) return { action: 'release' };
  const cancelled = pod.metadata.annotations?.[CANCELLED_ANNOTATION];
  if (cancelled !== undefined) return { action: 'finish', change: { phase: 'cancelled', reason: 'Cancelled', message: cancelled } };
  const reading = readPod(pod, wallNow);
  // deleted behind the runner's back: lost, unless it ended before the delete (readDeleted)
  const deleted = readDeleted(pod, reading);
  if (deleted) {
    const { phase, ...rest } = deleted;
    return { action: 'finish', change: { phase, ...rest } };
  }
  if (reading.phase === 'unknown') {
    const change = { phase: 'unknown' as const, pendingCause: undefined, reason: reading.reason, message: reading.message };
    return { action: 'unknown', change, unknownDeadline: wallNow.getTime() + (timeouts.unknown ?? DEFAULT_UNKNOWN_TIMEOUT_MS) };
  }
  if (reading.phase !== 'pending' && reading.phase !== 'running') {
    const { phase, ...rest } = reading;
    return { action: 'finish', change: { phase, ...rest } };
  }
  if (reading.phase === 'running') {
    const change = { phase: 'running' as const, pendingCause: undefined, reason: undefined, message: undefined, startedAt: reading.startedAt };
    return { action: 'run', change, runDeadline: timeouts.run === undefined ? undefined : Date.parse(reading.startedAt) + timeouts.run };
  }
  if (reading.reason && FATAL_WAITING.has(reading.reason)) return { action: 'finish', change: { phase: 'failed', reason: reading.reason, message: reading.message } };
  const gated = reading.cause === 'gated';
  // the gates' removal is seen when the cause leaves `gated` (or, taking over, while the scheduler has not looked yet)
  const ungatedAt = gated ? undefined : (status.ungatedAt ?? (status.pendingCause === 'gated' || justUngated(pod) ? wallNow.toISOString() : undefined));
  const change = { phase: 'pending' as const, pendingCause: reading.cause, reason: reading.reason, message: reading.message, ...(ungatedAt ? { ungatedAt } : {}) };
  // the start timeout counts from the pod's creation (from its ungating, if it was gated) and not while gated; a cause's own from when that cause began
  const created = Date.parse(pod.metadata.creationTimestamp ?? status.submittedAt);
  const causeTimeout = reading.cause === 'unschedulable' ? timeouts.unschedulable : reading.cause === 'image-pull' ? timeouts.imagePull : gated ? timeouts.gated : undefined;
  const bounds: number[] = [];
  if (timeouts.start !== undefined && !gated) bounds.push((ungatedAt ? Date.parse(ungatedAt) : created) + timeouts.start);
  // PodScheduled keeps the gated condition's transition time when the scheduler finds the pod Unschedulable: a cause begins at the ungating at the earliest
  if (causeTimeout !== undefined) bounds.push(Math.max(Date.parse(reading.since), ungatedAt ? Date.parse(ungatedAt) : -Infinity) + causeTimeout);
  return { action: 'wait', change, pendingDeadline: bounds.length === 0 ? undefined : { cause: reading.cause, deadline: Math.min(...bounds) } };
}

/** The status of a task whose pending timer fired (`podEvents`: the pod's last events). */
export function pendingTimedOut(status: TaskStatus, cause: PendingCause, podEvents: string[]): FinishChange {
  const reason = status.reason ?? (cause === 'unschedulable' ? 'Unschedulable' : 'PendingTimeout');
  return { phase: 'timed-out', reason, message: `pending (${cause}) past its timeout${status.message ? `: ${status.message}` : ''}`, podEvents };
}

/** The status of a task whose run timer fired: `RunTimeout`, apart from the kubelet's `DeadlineExceeded`. */
export function runTimedOut(timeouts: TaskTimeouts): FinishChange {
  return { phase: 'timed-out', reason: 'RunTimeout', message: `ran longer than its run timeout of ${timeouts.run} ms` };
}

/** The status of a task whose pod stayed in phase Unknown past its bound. */
export function unknownTimedOut(status: TaskStatus, timeouts: TaskTimeouts): FinishChange {
  return { phase: 'lost', reason: 'NodeLost', message: `the pod's node stopped reporting for ${timeouts.unknown ?? DEFAULT_UNKNOWN_TIMEOUT_MS} ms${status.message ? `: ${status.message}` : ''}` };
}

/** The status of a task that waited in the queue past its bound, never admitted. */
export function queueTimedOut(status: TaskStatus, timeouts: TaskTimeouts): FinishChange {
  const last = status.message?.startsWith('requeued: ') ? `; the last refusal: ${status.message.slice('requeued: '.length)}` : '';
  return { phase: 'timed-out', reason: 'QueueTimeout', message: `waited in the queue ${timeouts.queue} ms and was never admitted (no capacity or quota)${last}` };
}
