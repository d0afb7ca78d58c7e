export { createPodRunner, PodRunner, type CancelOptions, type TaskFilter } from './runner.js';
export type { PodRunnerOptions, CapacityOptions } from './options.js';
export type { LogLine, LogOptions } from './logs.js';
export type { Task, TaskPhase, TaskResources, TaskStatus, TaskTimeouts, PendingCause } from './task.js';
export { TERMINAL_PHASES, DEFAULT_TIMEOUTS } from './task.js';
export type { TemplateRule, TemplateSource } from './templates.js';
export type { PodTemplateSpec } from './pod.js';
export { podName } from './pod-build.js';
export { RUNNER_LABEL, TASK_ID_LABEL, TASK_TYPE_LABEL, SPEC_HASH_ANNOTATION, TASK_ANNOTATION, FENCING_TOKEN_ANNOTATION, CANCELLED_ANNOTATION, RECORDED_ANNOTATION, FINALIZER } from './pod.js';
