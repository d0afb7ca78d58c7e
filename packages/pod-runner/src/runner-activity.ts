import type { Clock, Logger } from '@rollcall/core';
import type { RequeueReason } from './errors.js';
import { isTerminal, type PendingCause, type TaskPhase, type TaskStatus } from './task.js';

/**
 * What a runner does, as it happens: for metrics and tracing
 * (`@rollcall/metrics`' `registerPodRunnerMetrics`), which statuses alone do
 * not show. Plain data, typed structurally: a consumer needs no import of this
 * package.
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

/**
 * Fans a runner's activity out to its listeners, and derives what needs
 * memory: each task's previous phase, and how long its pod spent in a pending
 * cause. Holds only tasks that have not ended. A listener that throws is
 * logged and changes nothing.
 */
export class RunnerActivityReporter {
  private readonly listeners = new Set<RunnerActivityListener>();
  private readonly open = new Map<string, { taskType: string; phase: TaskPhase; reason: string | undefined; cause?: PendingCause; since?: number }>();
  private closed = false;

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /**
   * Adds a listener; it is first told every task that has not ended (a
   * `status` each, `previousPhase` undefined), so it can count from now on.
   * Returns the function that removes it.
   */
  observe(listener: RunnerActivityListener): () => void {
    if (this.closed) {
      listener({ type: 'closed' });
      return () => {};
    }
    this.listeners.add(listener);
    for (const [taskId, t] of this.open) this.deliver(listener, { type: 'status', taskId, taskType: t.taskType, phase: t.phase, previousPhase: undefined, reason: t.reason });
    return () => this.listeners.delete(listener);
  }

  /** A task's status now (at submit, on every change, or learned from its pod). */
  status(status: TaskStatus, quiet = false): void {
    const held = this.open.get(status.taskId);
    const previousPhase = held?.phase;
    if (held?.cause !== undefined && (status.phase !== 'pending' || status.pendingCause !== held.cause)) {
      this.emit({ type: 'pending', taskType: held.taskType, cause: held.cause, seconds: (this.clock.now() - held.since!) / 1000 });
    }
    if (isTerminal(status)) this.open.delete(status.taskId);
    else {
      const sameCause = held?.cause !== undefined && held.cause === status.pendingCause && status.phase === 'pending';
      const cause = status.phase === 'pending' ? status.pendingCause : undefined;
      this.open.set(status.taskId, { taskType: status.taskType, phase: status.phase, reason: status.reason, cause, since: sameCause ? held.since : cause === undefined ? undefined : this.clock.now() });
    }
    // the phase is what is counted: a change of cause or message within it is not a status event
    if (previousPhase === status.phase) return;
    this.emit({ type: 'status', taskId: status.taskId, taskType: status.taskType, phase: status.phase, previousPhase, reason: status.reason, ...(quiet ? { quiet } : {}) });
  }

  emit(activity: RunnerActivity): void {
    if (this.closed) return;
    for (const listener of this.listeners) this.deliver(listener, activity);
  }

  close(): void {
    this.emit({ type: 'closed' });
    this.closed = true;
    this.listeners.clear();
    this.open.clear();
  }

  private deliver(listener: RunnerActivityListener, activity: RunnerActivity): void {
    try {
      listener(activity);
    } catch (err) {
      this.logger.error({ err }, '[rollcall] [pod-runner] an activity listener threw');
    }
  }
}
