import type { PendingCause, TaskPhase } from './task-phase.js';

/**
 * Why a create was put back in the queue: the quota refused it, the API server
 * asked to slow down (429), the quota admission lost a race (409), or the
 * create got no answer (a timeout, a 5xx, a reset) and its pod was not found
 * when read back (`Unavailable`).
 */
export type RequeueReason = 'QuotaExceeded' | 'TooManyRequests' | 'Conflict' | 'Unavailable';

/**
 * What a runner does, as it happens: for metrics and tracing
 * (`@rollcall/metrics`' `registerPodRunnerMetrics`), which statuses alone do
 * not show. Plain data: this package holds only types, so a consumer
 * (metrics) imports them without installing the runner or a Kubernetes client.
 */
export type RunnerActivity =
  /**
   * A task's phase or status changed. `previousPhase` is the phase this runner
   * held before (undefined for a task new to it); `quiet` when the runner
   * learned a terminal status from the pod, reported by another runner.
   */
  | { type: 'status'; taskId: string; taskType: string; phase: TaskPhase; previousPhase: TaskPhase | undefined; reason: string | undefined; quiet?: boolean }
  /** A task's pod left a pending cause (to another cause, to running, or to its end) after `seconds` in it, by the runner's clock since it saw the cause begin. */
  | { type: 'pending'; taskType: string; cause: PendingCause; seconds: number }
  /** A create was refused for quota or rate and the task put back at the head of the queue. */
  | { type: 'requeue'; taskType: string; reason: RequeueReason }
  /** An attempt ended in an outcome its template's retry policy retries; `reason` is that attempt's. */
  | { type: 'retry'; taskType: string; reason: string }
  /** The pod watch broke, with this error code, and is resumed (relisted first on `REVISION_TOO_OLD`). */
  | { type: 'watchEnded'; code: string }
  /**
   * One API request answered, refused or timed out: `verb` and `resource` as
   * the API server's audit log names them (`create` `pods`, `get` `pods/log`,
   * `watch` `pods`), `code` undefined on a 2xx, else the mapped error's.
   * A stream (a watch, a log) is reported when it opens, `durationMs` its time to answer.
   */
  | { type: 'request'; verb: string; resource: string; code: string | undefined; durationMs: number }
  /** A write was not sent: this runner's term may be over (its renew deadline passed, or a pod carries a newer term's token). */
  | { type: 'fenced'; verb: string }
  /** The runner closed: nothing more comes. */
  | { type: 'closed' };

export type RunnerActivityListener = (activity: RunnerActivity) => void;
