import { FATAL_WAITING, readPod } from './pod-status.js';
import { CANCELLED_ANNOTATION, FINALIZER, type Pod } from './pod.js';
import { isTerminal, type PendingCause, type TaskPhase, type TaskStatus, type TaskTimeouts } from './task.js';

/** A terminal status change. */
export type FinishChange = Partial<TaskStatus> & { phase: TaskPhase };

/**
 * What the leading runner does about one pod of one task:
 * - `ignore`: nothing (a pod of another attempt that still runs);
 * - `release-other`: let go a finished pod of another attempt still held by the finalizer;
 * - `release`: the task is recorded already: let its pod go;
 * - `finish`: record the terminal status, then let the pod go;
 * - `run`: the task runs: this status, the pending timer off, a run timer to `runDeadline` (if any);
 * - `wait`: the pod is pending: this status, the pending timer to `pendingDeadline` (none: no timer).
 * Deadlines are wall-clock milliseconds from the pod's own timestamps (see pod-time.ts).
 */
export type Decision =
  | { action: 'ignore' }
  | { action: 'release-other' }
  | { action: 'release' }
  | { action: 'finish'; change: FinishChange }
  | { action: 'run'; change: Partial<TaskStatus>; runDeadline?: number }
  | { action: 'wait'; change: Partial<TaskStatus>; pendingDeadline?: { cause: PendingCause; deadline: number } };

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
    const finished = reading.phase !== 'pending' && reading.phase !== 'running';
    return pod.metadata.finalizers?.includes(FINALIZER) && finished ? { action: 'release-other' } : { action: 'ignore' };
  }
  if (isTerminal(status)) return { action: 'release' };
  const cancelled = pod.metadata.annotations?.[CANCELLED_ANNOTATION];
  if (cancelled !== undefined) return { action: 'finish', change: { phase: 'cancelled', reason: 'Cancelled', message: cancelled } };
  const reading = readPod(pod, wallNow);
  if (reading.phase !== 'pending' && reading.phase !== 'running') {
    const { phase, ...rest } = reading;
    return { action: 'finish', change: { phase, ...rest } };
  }
  if (pod.metadata.deletionTimestamp) return { action: 'finish', change: { phase: 'lost', reason: 'Deleted', message: `pod ${pod.metadata.name} was deleted before it finished` } };
  if (reading.phase === 'running') {
    const change = { phase: 'running' as const, pendingCause: undefined, reason: undefined, message: undefined, startedAt: reading.startedAt };
    return { action: 'run', change, runDeadline: timeouts.run === undefined ? undefined : Date.parse(reading.startedAt) + timeouts.run };
  }
  if (reading.reason && FATAL_WAITING.has(reading.reason)) return { action: 'finish', change: { phase: 'failed', reason: reading.reason, message: reading.message } };
  const change = { phase: 'pending' as const, pendingCause: reading.cause, reason: reading.reason, message: reading.message };
  // the start timeout counts from the pod's creation, a cause's own from when that cause began
  const created = Date.parse(pod.metadata.creationTimestamp ?? status.submittedAt);
  const causeTimeout = reading.cause === 'unschedulable' ? timeouts.unschedulable : reading.cause === 'image-pull' ? timeouts.imagePull : undefined;
  const bounds: number[] = [];
  if (timeouts.start !== undefined) bounds.push(created + timeouts.start);
  if (causeTimeout !== undefined) bounds.push(Date.parse(reading.since) + causeTimeout);
  return { action: 'wait', change, pendingDeadline: bounds.length === 0 ? undefined : { cause: reading.cause, deadline: Math.min(...bounds) } };
}

/** The status of a task whose pending timer fired (`podEvents`: the pod's last events). */
export function pendingTimedOut(status: TaskStatus, cause: PendingCause, podEvents: string[]): FinishChange {
  const reason = status.reason ?? (cause === 'unschedulable' ? 'Unschedulable' : 'PendingTimeout');
  return { phase: 'timed-out', reason, message: `pending (${cause}) past its timeout${status.message ? `: ${status.message}` : ''}`, podEvents };
}

/** The status of a task whose run timer fired. */
export function runTimedOut(timeouts: TaskTimeouts): FinishChange {
  return { phase: 'timed-out', reason: 'DeadlineExceeded', message: `ran longer than its run timeout of ${timeouts.run} ms` };
}
