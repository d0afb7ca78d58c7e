import { podName } from './pod-build.js';
import { isTerminal, type TaskStatus } from './task.js';
import type { TaskRecord, TaskRecordState } from './task-record.js';

/** One row of {@link TaskView.list}: a task id and attempt, from its pod, its task record, or both. */
export interface TaskListing extends TaskStatus {
  /** `pod`: only its pod shows it (an earlier attempt, or a first-generation runner's task); `record`: no pod (queued, or ended and its pod gone); `pod+record`: both. */
  source: 'pod' | 'record' | 'pod+record';
  /** The state of the task's record, when the record holds this attempt: `finished` is not yet acknowledged by `onStatus`, `done` is. */
  record?: TaskRecordState;
}

/**
 * A record's status for its attempt (`task.attempt`): the full terminal status
 * once finished or done; queued otherwise — its pod name the one its pod will
 * have, in a retry's backoff while `retryAt` is ahead of `nowMs`, with a
 * pending cancel request shown as reason `CancelRequested`.
 */
export function recordStatus(runner: string, record: TaskRecord, nowMs: number): TaskStatus {
  const { body } = record;
  if (body.state !== 'queued' && body.status) return body.status;
  const { task } = body;
  const attempt = task.attempt ?? 1;
  const status: TaskStatus = { taskId: task.taskId, taskType: task.taskType, tags: { ...task.tags }, attempt, phase: 'queued', podName: podName(runner, task.taskId, attempt), template: body.template, submittedAt: body.submittedAt };
  if (body.previousAttempts) status.previousAttempts = body.previousAttempts;
  if (record.cancelRequested !== undefined) Object.assign(status, { reason: 'CancelRequested', message: record.cancelRequested });
  else if (body.retryAt !== undefined && body.retryAt > nowMs) Object.assign(status, { reason: 'RetryBackoff', message: `attempt ${attempt} at ${new Date(body.retryAt).toISOString()}` });
  return status;
}

/**
 * A task's status from its record and its pods' statuses: the record's end
 * when it holds one (the pod's may be a state the runner has not judged yet);
 * for a queued record, the pod of its attempt when there is one (the pod was
 * made, so it is the newer), else the record's queued status.
 */
export function mergedStatus(recorded: TaskStatus, pod: TaskStatus | undefined): TaskStatus {
  if (!pod) return recorded;
  if (!isTerminal(recorded)) return pod;
  return { ...pod, ...recorded, podName: pod.podName, template: pod.template || recorded.template };
}

/**
 * The runner's tasks from both places they are kept, one row per task id and
 * attempt: the pods (what runs, and earlier attempts not yet deleted) and the
 * task records (what is queued, and what ended, acknowledged or not, whose
 * pod may be gone). Sorted by submit time, then id and attempt.
 */
export function listTasks(runner: string, pods: TaskStatus[], records: TaskRecord[], nowMs: number): TaskListing[] {
  const rows = new Map<string, TaskListing>();
  const key = (s: Pick<TaskStatus, 'taskId' | 'attempt'>) => `${s.taskId}\u0000${s.attempt}`;
  for (const status of pods) rows.set(key(status), { ...status, source: 'pod' });
  for (const record of records) {
    const status = recordStatus(runner, record, nowMs);
    const pod = rows.get(key(status));
    const { source: _, ...podStatus } = pod ?? { source: undefined };
    const merged = mergedStatus(status, pod ? (podStatus as TaskStatus) : undefined);
    rows.set(key(status), { ...merged, source: pod ? 'pod+record' : 'record', record: record.body.state });
  }
  return [...rows.values()].sort((a, b) => a.submittedAt.localeCompare(b.submittedAt) || a.taskId.localeCompare(b.taskId) || a.attempt - b.attempt);
}
