import type { Clock } from '@rollcall/core';
import { delayUntilWall } from './pod-time.js';
import type { TaskState } from './task-state.js';
import type { PendingCause } from './task.js';

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

  clearPending(state: TaskState): void {
    state.timers.pending?.timer.cancel();
    state.timers.pending = undefined;
  }

  clear(state: TaskState): void {
    this.clearPending(state);
    state.timers.run?.cancel();
    state.timers.run = undefined;
  }
}
