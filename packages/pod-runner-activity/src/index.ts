/**
 * `@rollcall/pod-runner-activity`: what a pod runner reports as it works, and
 * the task phases and causes it names. Types only, no code: `@rollcall/metrics`
 * reads a runner's activity with them without installing the runner or its
 * Kubernetes client; `@rollcall/pod-runner` reports with them.
 */
export type { RequeueReason, RunnerActivity, RunnerActivityListener } from './runner-activity.js';
export type { PendingCause, TaskPhase } from './task-phase.js';
