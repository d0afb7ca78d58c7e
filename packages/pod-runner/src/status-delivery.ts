import type { Clock, Logger } from '@rollcall/core';
import { Backoff, DelayQueue } from '@rollcall/core/spi';
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

/** Whether `value` has a `then` method: a native promise, another library's, or any thenable. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** A terminal status on its way, and the pauses between its deliveries. */
interface Redelivery {
  status: TaskStatus;
  backoff: Backoff;
}

/**
 * Hands statuses to `onStatus`. A change on the way is told once and not
 * awaited; a terminal status (already stored) is delivered until acknowledged:
 * `onStatus` returned something other than a promise (or thenable), or one
 * that resolved. A throw or a rejection delivers it again after a pause.
 */
export class StatusDelivery {
  /** Each terminal status not acknowledged yet, by task id; one attempt of a task at a time. */
  private readonly redelivery = new Map<string, Redelivery>();
  /** Redeliveries waiting out their pause, by task id. */
  private readonly pauses: DelayQueue<string>;
  private closed = false;

  constructor(private readonly options: StatusDeliveryOptions) {
    this.pauses = new DelayQueue({
      clock: options.clock,
      run: (taskId) => {
        const slot = this.redelivery.get(taskId);
        if (slot) this.attempt(slot);
      },
    });
  }

  /** A status on the way: told once. */
  notify(status: TaskStatus): void {
    try {
      const answer = this.options.onStatus?.(copyStatus(status));
      if (isThenable(answer)) Promise.resolve(answer).catch((err: unknown) => this.options.logger.error({ err }, '[rollcall] [pod-runner] the onStatus callback rejected a status on the way (only terminal statuses are delivered again)'));
    } catch (err) {
      this.options.logger.error({ err }, '[rollcall] [pod-runner] the onStatus callback threw');
    }
  }

  /** A stored terminal status: `onStatus` is called now (synchronously), and again after a pause until it acknowledges. */
  deliver(status: TaskStatus): void {
    if (this.closed) return;
    const known = this.redelivery.get(status.taskId);
    if (known?.status.attempt === status.attempt) return; // on its way already, or waiting to be delivered again
    this.pauses.cancel(status.taskId);
    // No jitter: the pause is for this process's own callback, which no other process retries against.
    const slot: Redelivery = { status, backoff: new Backoff({ clock: this.options.clock, initialMs: FIRST_REDELIVERY_MS, maxMs: MAX_REDELIVERY_MS, jitter: 0 }) };
    this.redelivery.set(status.taskId, slot);
    this.attempt(slot);
  }

  private attempt(slot: Redelivery): void {
    const { status } = slot;
    const current = () => !this.closed && this.redelivery.get(status.taskId) === slot;
    const failed = (err: unknown) => {
      if (!current()) return;
      const pauseMs = slot.backoff.next();
      this.options.logger.warn({ err, task: status.taskId, retryInMs: pauseMs }, '[rollcall] [pod-runner] onStatus did not acknowledge a terminal status; delivering it again');
      this.pauses.schedule(status.taskId, pauseMs);
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
    // a thenable (any promise library's, not only a native Promise) is awaited like one
    if (isThenable(answer)) Promise.resolve(answer).then(acked, failed);
    else acked();
  }

  /** Whether the task's terminal status awaits its acknowledgement. */
  unacknowledged(taskId: string): boolean {
    return this.redelivery.has(taskId);
  }

  /** Stops delivering the task's status (a newer attempt was submitted, which acknowledges it). */
  drop(taskId: string): void {
    this.pauses.cancel(taskId);
    this.redelivery.delete(taskId);
  }

  close(): void {
    this.closed = true;
    this.pauses.close();
    this.redelivery.clear();
  }
}
