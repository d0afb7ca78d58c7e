import type { JsonValue } from '@rollcall/core';
import { InvalidArgumentError } from '@rollcall/core';
import type { PendingCause, TaskPhase } from '@rollcall/pod-runner-activity';
import { BACKEND } from './errors.js';

/** Bounds on the time a task's pod may spend in each state. Milliseconds; `undefined` means no bound. */
export interface TaskTimeouts {
  /** The scheduler reports the pod Unschedulable this long. Default 300000 (5 min). */
  unschedulable?: number;
  /** The container waits on its image (ErrImagePull, ImagePullBackOff) this long. Default 300000. */
  imagePull?: number;
  /** From the pod's creation — or, for a pod created with scheduling gates, from their removal — until it runs, whatever holds it (also bounds a container-config error). Default 600000 (10 min). */
  start?: number;
  /** The pod waits behind its scheduling gates (`spec.schedulingGates`: Kueue's admission, …) this long; past it the task is `timed-out` with reason `SchedulingGated`. Counts from the pod's creation. Default none: a queue admits when it admits. */
  gated?: number;
  /** Running time: sets the pod's `activeDeadlineSeconds` (rounded up), and the runner enforces it too. Default none. */
  run?: number;
  /** Waiting in the runner's queue (no capacity, quota refusals) before a pod is created; past it the task is `timed-out` with reason `QueueTimeout`. Counts from submit, and for a retry from its requeue. Default none. */
  queue?: number;
  /** The pod's phase is `Unknown` (its node stopped reporting) this long; past it the task is `lost` with reason `NodeLost`. Default 300000 (5 min, Kubernetes' own toleration of an unreachable node). */
  unknown?: number;
}

/** Requests and limits in Kubernetes quantities, e.g. `{ cpu: '500m', memory: '1Gi' }`. */
export interface TaskResources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

/** One task to run as a pod. */
export interface Task {
  /** Unique per runner: letters, digits, `-`, `_`, `.`, at most 63 characters, starting and ending alphanumeric (a label value). */
  taskId: string;
  /** Chooses the template with the tags; the same character rule as `taskId`. */
  taskType: string;
  /** Free-form key/values the template rules match on; kept in the pod's `rollcall.dev/task` annotation. */
  tags?: Record<string, string>;
  /** The main container's command (its entrypoint); default the template's / image's. */
  command?: string[];
  args?: string[];
  /** Added to the main container's environment, replacing the template's variables of the same name. */
  env?: Record<string, string>;
  /** Replaces the template's main-container requests and limits per resource name. */
  resources?: TaskResources;
  timeouts?: TaskTimeouts;
  /** Extra labels and annotations on the pod (e.g. for cost reports); Rollcall's own keys cannot be overridden. */
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** A retry of the same task is a new attempt and a new pod. Default 1. */
  attempt?: number;
}

export const TERMINAL_PHASES: ReadonlySet<TaskPhase> = new Set(['succeeded', 'failed', 'timed-out', 'cancelled', 'lost']);

/** How one attempt ended, kept when the task was retried. */
export interface AttemptOutcome {
  attempt: number;
  podName: string;
  phase: TaskPhase;
  reason?: string;
  message?: string;
  exitCode?: number;
  finishedAt?: string;
}

/** What the runner knows of a task. */
export interface TaskStatus {
  taskId: string;
  taskType: string;
  tags: Record<string, string>;
  attempt: number;
  phase: TaskPhase;
  /** The pod's name (deterministic from the task id and attempt). */
  podName: string;
  /** The template rule that built the pod. */
  template: string;
  /** While pending: what holds the pod. */
  pendingCause?: PendingCause;
  /** When the pod's scheduling gates were seen removed (by this runner's wall clock; a runner taking over sees it only while the scheduler has not looked at the pod yet): the start timeout counts from here. */
  ungatedAt?: string;
  /** Machine-readable reason (a stable code, listed in the README): `Completed`, `Error`, `OOMKilled`, `InitContainerFailed`, `DeadlineExceeded` (the kubelet's), `RunTimeout` (the runner's), `QueueTimeout`, `Unschedulable`, `ImagePullBackOff`, `Evicted`, `Deleted`, `NodeLost`, `Cancelled`, `RetryBackoff`, … */
  reason?: string;
  /** Human-readable detail: the scheduler's message, the cancel reason, … */
  message?: string;
  /** The task container's exit code. */
  exitCode?: number;
  /** The task container's termination message (the file, else the log tail on error). */
  terminationMessage?: string;
  /** The termination message parsed as JSON, when it is JSON. */
  result?: JsonValue;
  /** The pod's last events, on a timeout. */
  podEvents?: string[];
  /** Earlier attempts that ended in an outcome the template's retry policy retries, oldest first. */
  previousAttempts?: AttemptOutcome[];
  submittedAt: string;
  startedAt?: string;
  finishedAt?: string;
}

export const isTerminal = (status: Pick<TaskStatus, 'phase'>) => TERMINAL_PHASES.has(status.phase);

/** A status handed out: callers cannot change the runner's own. */
export function copyStatus(status: TaskStatus): TaskStatus {
  return structuredClone(status);
}

const ID_RULE = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const ID_RULE_TEXT = 'letters, digits, "-", "_" and ".", at most 63 characters, starting and ending with a letter or digit';

/** Rejects a task the runner cannot run, naming the field and the rule; changes nothing. */
export function assertTask(task: Task): void {
  if (!task || typeof task !== 'object') throw new InvalidArgumentError('a task must be an object', { backend: BACKEND });
  for (const field of ['taskId', 'taskType'] as const) {
    const value = task[field];
    if (typeof value !== 'string' || !ID_RULE.test(value)) throw new InvalidArgumentError(`task ${field} ${JSON.stringify(value)} is not valid: ${ID_RULE_TEXT}`, { backend: BACKEND });
  }
  if (task.attempt !== undefined && (!Number.isInteger(task.attempt) || task.attempt < 1 || task.attempt > 9999)) {
    throw new InvalidArgumentError(`task attempt ${task.attempt} is not valid: an integer from 1 to 9999`, { backend: BACKEND });
  }
  for (const [name, value] of Object.entries(task.timeouts ?? {})) {
    if (value !== undefined && (typeof value !== 'number' || !(value > 0))) throw new InvalidArgumentError(`task timeouts.${name} ${value} is not valid: a positive number of milliseconds`, { backend: BACKEND });
  }
  for (const field of ['command', 'args'] as const) {
    const list = task[field];
    if (list !== undefined && (!Array.isArray(list) || list.some((s) => typeof s !== 'string'))) throw new InvalidArgumentError(`task ${field} must be an array of strings`, { backend: BACKEND });
  }
  for (const field of ['tags', 'env', 'labels', 'annotations'] as const) {
    const map = task[field];
    if (map !== undefined && (typeof map !== 'object' || Object.values(map).some((v) => typeof v !== 'string'))) throw new InvalidArgumentError(`task ${field} must map names to strings`, { backend: BACKEND });
  }
}

/** Default timeouts, milliseconds. */
export const DEFAULT_TIMEOUTS: Required<Omit<TaskTimeouts, 'run' | 'queue' | 'unknown' | 'gated'>> = { unschedulable: 300_000, imagePull: 300_000, start: 600_000 };

/**
 * The bound on phase Unknown when neither the task nor the runner sets one,
 * milliseconds. Applied when read, not merged into the task's timeouts: the
 * pod's task annotation (and so its spec hash) stays what a runner without
 * this bound wrote, so a task resubmitted across an upgrade is the same task.
 */
export const DEFAULT_UNKNOWN_TIMEOUT_MS = 300_000;
