import type { Clock, Logger, Timer } from '@rollcall/core';
import { copyStatus } from './task-state.js';
import type { TaskStatus } from './task.js';

/** First pause before delivering a terminal status again after `onStatus` rejected it; doubles up to {@link MAX_REDELIVERY_MS}. Milliseconds. */
export const FIRST_REDELIVERY_MS = 1000;
export const MAX_REDELIVERY_MS = 60_000;

/** What {@link StatusDelivery} takes. */
export interface StatusDeliveryOptions {
  onStatus: ((status: TaskStatus) => unknown) | undefined;
  clock: Clock;
  logger: Logger;
  /** `onStatus` acknowledged the terminal status (its promise resolved): store that. */
  acknowledged(status: TaskStatus): void;
}

/**
 * Hands statuses to `onStatus`. A change on the way is told once and not
 * awaited; a terminal status (already stored) is delivered until acknowledged:
 * `onStatus` returned something other than a promise, or a promise that
 * resolved. A throw or a rejection delivers it again after a pause.
 */
export class StatusDelivery {
  private readonly redelivery = new Map<string, { attempt: number; timer?: Timer; delayMs: number }>();
  private closed = false;

  constructor(private readonly options: StatusDeliveryOptions) {}

  /** A status on the way: told once. */
  notify(status: TaskStatus): void {
    try {
      const answer = this.options.onStatus?.(copyStatus(status));
      if (answer instanceof Promise) answer.catch((err: unknown) => this.options.logger.error({ err }, '[rollcall] [pod-runner] the onStatus callback rejected a status on the way (only terminal statuses are delivered again)'));
    } catch (err) {
      this.options.logger.error({ err }, '[rollcall] [pod-runner] the onStatus callback threw');
    }
  }

  /** A stored terminal status: `onStatus` is called now (synchronously), and again after a pause until it acknowledges. */
  deliver(status: TaskStatus): void {
    if (this.closed) return;
    const known = this.redelivery.get(status.taskId);
    if (known?.attempt === status.attempt) return; // on its way already, or waiting to be delivered again
    known?.timer?.cancel();
    const slot: { attempt: number; timer?: Timer; delayMs: number } = { attempt: status.attempt, delayMs: FIRST_REDELIVERY_MS };
    this.redelivery.set(status.taskId, slot);
    this.attempt(status, slot);
  }

  private attempt(status: TaskStatus, slot: { attempt: number; timer?: Timer; delayMs: number }): void {
    const current = () => !this.closed && this.redelivery.get(status.taskId) === slot;
    const failed = (err: unknown) => {
      if (!current()) return;
      this.options.logger.warn({ err, task: status.taskId, retryInMs: slot.delayMs }, '[rollcall] [pod-runner] onStatus did not acknowledge a terminal status; delivering it again');
      slot.timer = this.options.clock.setTimeout(() => {
        slot.timer = undefined;
        slot.delayMs = Math.min(slot.delayMs * 2, MAX_REDELIVERY_MS);
        if (current()) this.attempt(status, slot);
      }, slot.delayMs);
    };
    const acked = () => {
      if (!current()) return;
      this.redelivery.delete(status.taskId);
      this.options.acknowledged(status);
    };
    let answer: unknown;
    try {
      answer = this.options.onStatus?.(copyStatus(status));
    } catch (err) {
      return failed(err);
    }
    if (answer instanceof Promise) answer.then(acked, failed);
    else acked();
  }

  /** Whether the task's terminal status awaits its acknowledgement. */
  unacknowledged(taskId: string): boolean {
    return this.redelivery.has(taskId);
  }

  /** Stops delivering the task's status (a newer attempt was submitted, which acknowledges it). */
  drop(taskId: string): void {
    this.redelivery.get(taskId)?.timer?.cancel();
    this.redelivery.delete(taskId);
  }

  close(): void {
    this.closed = true;
    for (const slot of this.redelivery.values()) slot.timer?.cancel();
    this.redelivery.clear();
  }
}
