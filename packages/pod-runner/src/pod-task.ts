import type { TaskAnnotation } from './pod-build.js';
import { readDeleted, readPod } from './pod-status.js';
import { CANCELLED_ANNOTATION, type Pod, RECORDED_ANNOTATION, TASK_ANNOTATION } from './pod.js';
import type { TaskStatus } from './task.js';

/** The task a pod runs, from its `rollcall.dev/task` annotation, with a `pending` status; undefined when the annotation is unreadable. */
export function taskOfPod(pod: Pod): { record: TaskAnnotation; status: TaskStatus } | undefined {
  let record: TaskAnnotation;
  try {
    record = JSON.parse(pod.metadata.annotations?.[TASK_ANNOTATION] ?? '') as TaskAnnotation;
  } catch {
    return undefined;
  }
  return { record, status: { taskId: record.taskId, taskType: record.taskType, tags: record.tags ?? {}, attempt: record.attempt, phase: 'pending', podName: pod.metadata.name, template: record.template, submittedAt: record.submittedAt } };
}

/** The final status a runner recorded on the pod, if it did. */
export function recordedStatus(pod: Pod): Partial<TaskStatus> | undefined {
  const recorded = pod.metadata.annotations?.[RECORDED_ANNOTATION];
  if (!recorded) return undefined;
  try {
    return JSON.parse(recorded) as Partial<TaskStatus>;
  } catch {
    // recorded, unreadable: it was reported once already
    return { phase: 'lost', reason: 'Unreadable', message: `the status recorded on pod ${pod.metadata.name} cannot be read` };
  }
}

/**
 * A task's status as its pod tells it, for a process that is not the runner:
 * the status the runner recorded on the pod, else what the pod shows now.
 * Undefined for a pod without a readable task annotation.
 */
export function statusFromPod(pod: Pod): TaskStatus | undefined {
  const task = taskOfPod(pod);
  if (!task) return undefined;
  const base = task.status;
  const recorded = recordedStatus(pod);
  if (recorded) return { ...base, ...recorded };
  const cancelled = pod.metadata.annotations?.[CANCELLED_ANNOTATION];
  if (cancelled !== undefined) return { ...base, phase: 'cancelled', reason: 'Cancelled', message: cancelled };
  const current = readPod(pod);
  const reading = readDeleted(pod, current) ?? current;
  if (reading.phase === 'pending') return { ...base, pendingCause: reading.cause, ...(reading.reason ? { reason: reading.reason } : {}), ...(reading.message ? { message: reading.message } : {}) };
  if (reading.phase === 'running') return { ...base, phase: 'running', startedAt: reading.startedAt };
  const { phase, ...rest } = reading;
  return Object.fromEntries(Object.entries({ ...base, phase, ...rest }).filter(([, v]) => v !== undefined)) as unknown as TaskStatus;
}
