import type { RetryPolicy } from './retry-policy.js';
import type { AttemptOutcome, Task, TaskStatus } from './task.js';

/**
 * The task store's layout version, in every record's `v` and its ConfigMap's
 * `format` key. A runner reads every version up to its own; a newer one is
 * SCHEMA_MISMATCH naming the record. Additive fields keep the version, and a
 * read-modify-write keeps fields it does not know, so the previous minor
 * release reads newer records.
 */
export const TASK_RECORD_FORMAT = 2;

/** Label on every task record of a runner (its value: the runner's name): the record informer's selector. */
export const TASK_RECORD_LABEL = 'rollcall.dev/task-record';
/** Label with the record's state, so `kubectl get cm -l` can count queued tasks without decoding. */
export const TASK_STATE_LABEL = 'rollcall.dev/task-state';
/**
 * Annotation with the runner term (its fencing token) that wrote the object
 * last, on task records and on pods: the fencing policy compares it with the
 * runner's term Lease, and on DELETE reads it from the stored object.
 */
export const WRITE_TERM_ANNOTATION = 'rollcall.dev/write-term';
/** Annotation a follower or the CLI sets to ask the leader to cancel: its value is the reason. Unfenced. */
export const CANCEL_REQUESTED_ANNOTATION = 'rollcall.dev/cancel-requested';
/** Annotation a follower sets to ask for the next attempt of an ended task: a JSON `Task`. Unfenced. */
export const SUBMIT_REQUESTED_ANNOTATION = 'rollcall.dev/submit-requested';

/** Where a task is: waiting for (or running) its pod, ended and not yet acknowledged, or acknowledged. */
export type TaskRecordState = 'queued' | 'finished' | 'done';

/** What a task record's `record` data key holds (JSON). */
export interface TaskRecordBody {
  v: number;
  state: TaskRecordState;
  /** The task as submitted, timeouts merged; `attempt` is the one running or to run next. */
  task: Task;
  /** The template rule that builds its pod. */
  template: string;
  /** sha256 of the pod as built (pod-build.ts): a resubmit with another hash is a CONFLICT. */
  specHash: string;
  /** The template's retry policy as it was at submit: a template changed later does not change a task already accepted. */
  retry?: RetryPolicy;
  /** Wall-clock ISO time of the submit; with `seq` and the name it orders the queue. */
  submittedAt: string;
  /** Orders the submits of one process within one millisecond (submit-order.ts). */
  seq: number;
  /** A retry's backoff ends here (wall-clock ms): its attempt is not created before. */
  retryAt?: number;
  /** Earlier attempts the retry policy retried, oldest first (at most 100). */
  previousAttempts?: AttemptOutcome[];
  /** `finished` and `done`: the full terminal status of `task.attempt`. */
  status?: TaskStatus;
  /** `done`: when `onStatus` acknowledged it (wall-clock ms); retention counts from here. */
  ackedAt?: number;
}

/** A task record as read: its body and the object's identity, for conditional writes. */
export interface TaskRecord {
  /** The ConfigMap's name (record-name rule: deterministic from runner and task id). */
  name: string;
  uid: string;
  resourceVersion: string;
  body: TaskRecordBody;
  /** The term of the runner that wrote it last (`rollcall.dev/write-term`); absent for a follower's submit. */
  writeTerm?: number;
  /** A pending cancel request's reason. */
  cancelRequested?: string;
  /** A pending request for a next attempt. */
  submitRequested?: Task;
}
