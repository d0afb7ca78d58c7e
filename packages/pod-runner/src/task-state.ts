import type { Timer } from '@rollcall/core';
import type { Pod } from './pod.js';
import type { Task, TaskStatus, TaskTimeouts } from './task.js';
import type { PendingCause } from '@rollcall/pod-runner-activity';
import type { ResolvedTemplate } from './templates.js';

/** What submit knows and a re-attached task does not: enough to build (and so create) its pod. */
export interface TaskSpec {
  task: Task;
  template: ResolvedTemplate;
}

/** The task's timers, on the runner's clock: at most one of each kind. */
export interface TaskTimers {
  /** `deadline` is wall-clock ms from the pod's timestamps: the same deadline is not re-armed. */
  pending?: { cause: PendingCause; deadline: number; timer: Timer };
  run?: Timer;
  /** The bound on the pod's phase Unknown. */
  unknown?: Timer;
  /** The bound on waiting in the queue. */
  queue?: Timer;
  /** The backoff before a retry's next attempt is queued. */
  retry?: Timer;
}

/** Letting a finished pod go: the final status onto it, the finalizer off, then delete it. */
export interface ReleaseState {
  /** A release in flight. */
  inFlight?: Promise<void>;
  /** The pod changed while a release was in flight: release again from its new state. */
  again?: boolean;
  deleteRequested?: boolean;
  /** A kept failed pod's delete, or the retry of a failed release. */
  deleteTimer?: Timer;
  /** The grace period a cancel asked for. Seconds. */
  graceSeconds?: number;
}

/** Everything the runner holds for one task. */
export interface TaskState {
  status: TaskStatus;
  /** Undefined for a task re-attached from its pod. */
  spec?: TaskSpec;
  timeouts: TaskTimeouts;
  specHash?: string;
  /** The pod's last state seen through the watch. */
  pod?: Pod;
  /** Counts against capacity (its pod is being created, pending or running). */
  holdsSlot: boolean;
  /** The create in flight; it never rejects: a refusal lands in `createError`. */
  creating?: Promise<void>;
  createError?: unknown;
  /** The terminal status (or a retry's next attempt) being written to the ledger: true once stored, false when it could not be (the runner closed). Its pod is let go only after. */
  stored?: Promise<boolean>;
  timers: TaskTimers;
  release: ReleaseState;
  waiters: { resolve(status: TaskStatus): void; reject(err: Error): void }[];
}

export function newTaskState(status: TaskStatus, timeouts: TaskTimeouts, specHash: string | undefined, spec?: TaskSpec): TaskState {
  return { status, spec, timeouts, specHash, holdsSlot: false, timers: {}, release: {}, waiters: [] };
}

/** A status handed out: callers cannot change the runner's own. */
export function copyStatus(status: TaskStatus): TaskStatus {
  return structuredClone(status);
}

/** The status with `change` applied (an undefined field removed), or undefined when nothing changes. */
export function changedStatus(status: TaskStatus, change: Partial<TaskStatus>): TaskStatus | undefined {
  const next = { ...status, ...change };
  for (const key of Object.keys(next) as (keyof TaskStatus)[]) if (next[key] === undefined) delete next[key];
  return JSON.stringify(next) === JSON.stringify(status) ? undefined : next;
}
