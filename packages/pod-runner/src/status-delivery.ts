import type { Clock, Logger } from '@rollcall/core';
import { Backoff } from '@rollcall/core/spi';
import { copyStatus, type TaskStatus } from './task.js';

/** First pause before delivering a terminal status again after `onStatus` rejected it; doubles up to {@link MAX_REDELIVERY_MS}. Milliseconds. */
export const FIRST_REDELIVERY_MS = 1000;
export const MAX_REDELIVERY_MS = 60_000;

/** A terminal status's hand-over as its owner reads it: not started (or its pause is over: hand it over again), in flight or pausing, acknowledged. */
export type DeliveryState = 'none' | 'pending' | 'acked';

/** What {@link StatusDelivery} takes. */
export interface StatusDeliveryOptions {
  onStatus: ((status: TaskStatus) => unknown) | undefined;
  /** The pauses' clock (monotonic `now()`): no timer is set on it here. */
  clock: Clock;
  logger: Logger;
  /**
   * Asks the owner to look at the task again in `delayMs`: after an
   * acknowledgement (0: store it), after a refusal (the pause: call
   * {@link StatusDelivery.deliver} again then). The delivery keeps no timer of its own.
   */
  schedule(taskId: string, delayMs: number): void;
}

/** Whether `value` has a `then` method: a native promise, another library's, or any thenable. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** A status on the way, told to `onStatus` once and not awaited: a throw or a rejection is logged. */
export function notifyStatus(onStatus: ((status: TaskStatus) => unknown) | undefined, status: TaskStatus, logger: Logger): void {
  try {
    const answer = onStatus?.(copyStatus(status));
    if (isThenable(answer)) Promise.resolve(answer).catch((err: unknown) => logger.error({ err }, '[rollcall] [pod-runner] the onStatus callback rejected a status on the way (only terminal statuses are delivered again)'));
  } catch (err) {
    logger.error({ err }, '[rollcall] [pod-runner] the onStatus callback threw');
  }
}

/** A terminal status on its way: its state, and the pauses between its deliveries. */
interface Slot {
  status: TaskStatus;
  backoff: Backoff;
  state: 'pending' | 'paused' | 'acked';
  /** When a pause ends, on the clock's `now()`. */
  due: number;
}

/**
 * Hands statuses to `onStatus`. A change on the way is told once and not
 * awaited; a terminal status (already stored) is delivered until acknowledged:
 * `onStatus` returned something other than a promise (or thenable), or one
 * that resolved. A throw or a rejection pauses it (1 s, doubling up to 60 s);
 * the owner is told through `schedule` and hands it over again (the leader's
 * sync: decide reads {@link state}).
 */
export class StatusDelivery {
  /** Each terminal status not acknowledged and stored yet, by task id; one attempt of a task at a time. */
  private readonly slots = new Map<string, Slot>();
  private closed = false;

  constructor(private readonly options: StatusDeliveryOptions) {}

  /** A status on the way: told once. */
  notify(status: TaskStatus): void {
    notifyStatus(this.options.onStatus, status, this.options.logger);
  }

  /** The hand-over of the task's terminal status: `none` also once a refusal's pause is over. */
  state(taskId: string): DeliveryState {
    const slot = this.slots.get(taskId);
    if (!slot) return 'none';
    if (slot.state === 'paused') return this.options.clock.now() >= slot.due ? 'none' : 'pending';
    return slot.state;
  }

  /** Milliseconds left of a refusal's pause (a sync before its end must look again then: timers may fire early); undefined when not pausing or over. */
  pauseLeftMs(taskId: string): number | undefined {
    const slot = this.slots.get(taskId);
    const left = slot?.state === 'paused' ? slot.due - this.options.clock.now() : 0;
    return left > 0 ? left : undefined;
  }

  /** The status being handed over, if any. */
  status(taskId: string): TaskStatus | undefined {
    return this.slots.get(taskId)?.status;
  }

  /** A stored terminal status: `onStatus` is called now (synchronously), unless it is on its way, pausing, or acknowledged already. */
  deliver(status: TaskStatus): void {
    if (this.closed) return;
    const known = this.slots.get(status.taskId);
    const same = known?.status.attempt === status.attempt;
    if (same && this.state(status.taskId) !== 'none') return;
    // No jitter: the pause is for this process's own callback, which no other process retries against.
    const slot: Slot = same ? known! : { status, backoff: new Backoff({ clock: this.options.clock, initialMs: FIRST_REDELIVERY_MS, maxMs: MAX_REDELIVERY_MS, jitter: 0 }), state: 'pending', due: 0 };
    this.slots.set(status.taskId, slot);
    this.attempt(slot);
  }

  private attempt(slot: Slot): void {
    const { status } = slot;
    slot.state = 'pending';
    const current = () => !this.closed && this.slots.get(status.taskId) === slot;
    const failed = (err: unknown) => {
      if (!current()) return;
      const pauseMs = slot.backoff.next();
      slot.state = 'paused';
      slot.due = this.options.clock.now() + pauseMs;
      this.options.logger.warn({ err, task: status.taskId, retryInMs: pauseMs }, '[rollcall] [pod-runner] onStatus did not acknowledge a terminal status; delivering it again');
      this.options.schedule(status.taskId, pauseMs);
    };
    const acked = () => {
      if (!current()) return;
      slot.state = 'acked';
      this.options.schedule(status.taskId, 0);
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
    const slot = this.slots.get(taskId);
    return slot !== undefined && slot.state !== 'acked';
  }

  /** Forgets the task's hand-over: its acknowledgement is stored, or a newer attempt was submitted (which acknowledges it). */
  forget(taskId: string): void {
    this.slots.delete(taskId);
  }

  close(): void {
    this.closed = true;
    this.slots.clear();
  }
}
