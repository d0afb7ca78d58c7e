import type { Clock, Logger } from '@rollcall/core';
import type { PendingCause, RunnerActivity, RunnerActivityListener, TaskPhase } from '@rollcall/pod-runner-activity';
import { isTerminal, type TaskStatus } from './task.js';

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
