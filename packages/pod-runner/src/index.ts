export { createPodRunner } from './create-pod-runner.js';
export { PodRunner, type CancelOptions, type TaskFilter } from './runner.js';
export type { PodRunnerOptions, CapacityOptions, LedgerOptions, RecordOptions } from './options.js';
export { LEDGER_FORMAT } from './ledger-format.js';
export { DEFAULT_MAX_DONE, DEFAULT_RETAIN_DONE_MS } from './options.js';
export type { LogLine, LogOptions } from './logs.js';
export { directoryLogSink, logFile, DEFAULT_LOG_DIR, type LogKey, type LogSink, type TaskLogOptions } from './log-sink.js';
export { DEFAULT_MAX_LOG_BYTES, CUT_MARKER } from './log-writer.js';
export type { Task, TaskResources, TaskStatus, TaskTimeouts, AttemptOutcome } from './task.js';
export { RETRYABLE_REASONS, type RetryPolicy, type RetryableReason, type ExitCodeRule } from './retry-policy.js';
export { TERMINAL_PHASES, DEFAULT_TIMEOUTS } from './task.js';
export type { TemplateRule, TemplateSource } from './templates.js';
export type { TaskOverrides } from './task-overrides.js';
export type { PodTemplateSpec } from './pod.js';
export { podName } from './pod-build.js';
export { RUNNER_LABEL, TASK_ID_LABEL, TASK_TYPE_LABEL, SPEC_HASH_ANNOTATION, TASK_ANNOTATION, TASK_CONTAINER_ANNOTATION, FENCING_TOKEN_ANNOTATION, CANCELLED_ANNOTATION, RECORDED_ANNOTATION, FINALIZER } from './pod.js';
export { openTaskView, TaskView, DEFAULT_CANCEL_WAIT_MS, type TaskViewOptions, type CancelResult, type CancelOptions as TaskViewCancelOptions, type UnreadableRecord } from './task-view.js';
export { statusFromPod } from './pod-task.js';
export type { TaskListing } from './task-listing.js';
export type { TaskRecordState } from './task-record.js';
export { ledgerName } from './ledger-format.js';
// The activity's vocabulary lives in a types-only package, so metrics reads it without installing the runner.
export type { PendingCause, RequeueReason, RunnerActivity, RunnerActivityListener, TaskPhase } from '@rollcall/pod-runner-activity';
export { podRunnerAdmissionManifest, podRunnerAdmissionPolicies, type PodRunnerAdmissionOptions } from './admission-policy.js';
// The server-side fence of a term's writes (issue 35): its policy, the term Lease and its probe.
export { fencingManifest, fencingPolicy, FENCING_NAMESPACE_LABEL, STALE_TERM_MESSAGE, TERM_LEASE_LABEL, termLeaseName, type FencingPolicyOptions } from './fence-policy.js';
export { probeFence, stampTerm, TermFence, MAX_TERM, type FencedTerm, type FenceMode, type FenceProbes, type ProbeAnswer, type ProbeTiming, type TermFenceOptions, type TermLeaseState } from './term-fence.js';
export type { PatchOptions, PodPreconditions } from './pods-api.js';
