import { FINALIZER, type Pod, TASK_ANNOTATION, TASK_ID_LABEL } from '../../../src/pod.js';
import type { RetryPolicy } from '../../../src/retry-policy.js';
import { type TaskRecord, WRITE_TERM_ANNOTATION } from '../../../src/task-record.js';
import type { TaskTimeouts } from '../../../src/task.js';
import type { Rng } from './random.js';

/** The model's runner name: its pods are `rc-<task>-<attempt>`. */
export const RUNNER = 'rc';

const RETRY: RetryPolicy = {
  maxAttempts: 3,
  backoffMs: 5000,
  retryOn: { reasons: ['EvictedByKubelet', 'PreemptedByKubelet', 'NodeShutdown', 'Deleted', 'Evicted', 'OOMKilled', 'RunTimeout', 'NodeLost', 'PodGarbageCollected'], exitCodes: { operator: 'In', values: [1] } },
};

/** A submitted task's record: timeouts short enough to pass in a sequence, a retry policy for most, scheduling gates for some. */
export function newRecord(id: string, seq: number, now: number, rng: Rng): TaskRecord {
  const timeouts: TaskTimeouts = { start: 60_000, unschedulable: 30_000, imagePull: 30_000, unknown: 60_000 };
  if (rng.chance(0.3)) timeouts.run = 120_000;
  if (rng.chance(0.3)) timeouts.queue = 90_000;
  if (rng.chance(0.2)) timeouts.gated = 100_000;
  const tags: Record<string, string> = rng.chance(0.2) ? { gated: 'yes' } : {};
  return {
    name: `${RUNNER}-task-${id}`,
    uid: `u-${id}`,
    resourceVersion: '',
    body: { v: 2, state: 'queued', task: { taskId: id, taskType: 'model', tags, attempt: 1, timeouts }, template: 'default', specHash: 'h', submittedAt: new Date(now).toISOString(), seq, ...(rng.chance(0.6) ? { retry: RETRY } : {}) },
  };
}

/** The pod the runner creates for an attempt: its finalizer, the term's stamp, gated when the task's tags say so. */
export function newPod(name: string, record: TaskRecord, attempt: number, term: number, now: number): Pod {
  const id = record.body.task.taskId;
  const gated = record.body.task.tags?.gated !== undefined;
  const at = new Date(now).toISOString();
  return {
    metadata: {
      name,
      uid: `${name}-${now}`,
      creationTimestamp: at,
      finalizers: [FINALIZER],
      labels: { [TASK_ID_LABEL]: id },
      annotations: { [TASK_ANNOTATION]: JSON.stringify({ taskId: id, attempt }), [WRITE_TERM_ANNOTATION]: String(term) },
    },
    spec: { containers: [{ name: 'main' }], ...(gated ? { schedulingGates: [{ name: 'model/gate' }] } : {}) },
    status: { phase: 'Pending', ...(gated ? { conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated', lastTransitionTime: at }] } : {}) },
  };
}
