import type { Clock } from '@rollcall/core';
import { delayUntilWall } from './pod-time.js';
import type { TaskState } from './task-state.js';
import type { PendingCause } from '@rollcall/pod-runner-activity';

/**
 * A task's pending and run timers on the runner's clock. Their deadlines are
 * wall-clock instants from the pod's own timestamps, so a runner that restarts
 * or takes over resumes them where they were; each is turned into a delay on
 * the clock once, when armed (pod-time.ts).
 */
export class TaskTimers {
  constructor(private readonly clock: Clock) {}

  /** Arms (or moves) the pending timer; the same cause and deadline armed already is left running. */
  armPending(state: TaskState, cause: PendingCause, deadline: number, fire: (cause: PendingCause) => void): void {
    const armed = state.timers.pending;
    if (armed?.cause === cause && armed.deadline === deadline) return;
    this.clearPending(state);
    const timer = this.clock.setTimeout(() => fire(cause), delayUntilWall(this.clock, deadline));
    state.timers.pending = { cause, deadline, timer };
  }

  /** Arms the run timer once: a running pod seen again keeps the timer it has. */
  armRun(state: TaskState, deadline: number, fire: () => void): void {
    if (state.timers.run) return;
    state.timers.run = this.clock.setTimeout(fire, delayUntilWall(this.clock, deadline));
  }

  /** Arms the Unknown bound once: the pod seen Unknown again keeps the timer it has. */
  armUnknown(state: TaskState, deadline: number, fire: () => void): void {
    this.armBound(state, 'unknown', deadline, fire);
  }

  clearUnknown(state: TaskState): void {
    this.clearBound(state, 'unknown');
  }

  /** Arms the queue bound once per wait in the queue (a requeue after a refusal keeps it). */
  armQueue(state: TaskState, deadline: number, fire: () => void): void {
    this.armBound(state, 'queue', deadline, fire);
  }

  clearQueue(state: TaskState): void {
    this.clearBound(state, 'queue');
  }

  /** A bound armed once until it fires or is cleared, at a wall-clock `deadline`. */
  private armBound(state: TaskState, slot: 'unknown' | 'queue', deadline: number, fire: () => void): void {
    if (state.timers[slot]) return;
    state.timers[slot] = this.clock.setTimeout(() => {
      state.timers[slot] = undefined;
      fire();
    }, delayUntilWall(this.clock, deadline));
  }

  private clearBound(state: TaskState, slot: 'unknown' | 'queue'): void {
    state.timers[slot]?.cancel();
    state.timers[slot] = undefined;
  }

  /** The backoff before a retry: `fire` queues the next attempt. Milliseconds on the clock. */
  armRetry(state: TaskState, delayMs: number, fire: () => void): void {
    state.timers.retry?.cancel();
    state.timers.retry = this.clock.setTimeout(() => {
      state.timers.retry = undefined;
      fire();
    }, delayMs);
  }

  clearPending(state: TaskState): void {
    state.timers.pending?.timer.cancel();
    state.timers.pending = undefined;
  }

  /** The timers that watch a pod off (the runner stops acting on pods; the queue's and a retry's keep running). */
  clearPodTimers(state: TaskState): void {
    this.clearPending(state);
    this.clearUnknown(state);
    state.timers.run?.cancel();
    state.timers.run = undefined;
  }

  /** Every timer of the task off (it ended, or the runner closes). */
  clear(state: TaskState): void {
    this.clearPodTimers(state);
    this.clearQueue(state);
    state.timers.retry?.cancel();
    state.timers.retry = undefined;
  }
}
