import { FINALIZER, type Pod } from '../../src/pod.js';
import { readAttemptPod } from '../../src/pod-deadlines.js';
import type { TaskStatus, TaskTimeouts } from '../../src/task.js';

/** Wall-clock time of the manual clocks' monotonic 0 and of the pods' timestamps below. */
export const T0 = Date.UTC(2026, 0, 1);
export const at = (ms: number) => new Date(T0 + ms).toISOString();

export function status(change: Partial<TaskStatus> = {}): TaskStatus {
  return { taskId: 't1', taskType: 'report', tags: {}, attempt: 1, phase: 'pending', podName: 'rollcall-t1-1', template: 'default', submittedAt: at(0), ...change };
}

export const timeouts = (change: TaskTimeouts = {}): TaskTimeouts => ({ unschedulable: 300_000, imagePull: 300_000, start: 600_000, ...change });

/** A pod of task t1 attempt 1, created at T0, held by the runner's finalizer; `status` and metadata as given. */
export function pod(podStatus: Pod['status'] = {}, metadata: Partial<Pod['metadata']> = {}): Pod {
  return {
    metadata: { name: 'rollcall-t1-1', creationTimestamp: at(0), finalizers: [FINALIZER], labels: {}, annotations: {}, ...metadata },
    spec: { containers: [{ name: 'main' }] },
    status: podStatus,
  };
}

/**
 * The pod's reading as the first generation's table tests state it (`finish`,
 * `run`, `wait` with its pending deadline, `unknown`), from pod-deadlines.ts'
 * `readAttemptPod`, reconcile's successor: what the sync's `decide` acts on.
 */
export function podDecision(task: { status: TaskStatus; timeouts: TaskTimeouts }, p: Pod, wallNow: Date) {
  const v = readAttemptPod(p, task.status, task.timeouts, wallNow.getTime());
  switch (v.kind) {
    case 'ended':
      return { action: 'finish' as const, change: v.change };
    case 'running':
      return { action: 'run' as const, change: v.change, runDeadline: v.deadline };
    case 'unknown':
      return { action: 'unknown' as const, change: v.change, unknownDeadline: v.deadline };
    case 'pending':
      return { action: 'wait' as const, change: v.change, pendingDeadline: v.deadline === undefined ? undefined : { cause: v.cause, deadline: v.deadline } };
  }
}
