import type { Clock, Timer } from '@rollcall/core';

/** The longest pause after a refusal. Milliseconds. */
export const MAX_REQUEUE_MS = 30_000;

/** What {@link TaskQueue} takes. */
export interface TaskQueueOptions {
  clock: Clock;
  /** First pause after a refusal; doubles per refusal up to {@link MAX_REQUEUE_MS}. Milliseconds. */
  requeueDelayMs: number;
  /** Called when a pause ends: the queue may be tried again. */
  onResume: () => void;
}

/**
 * Tasks waiting for capacity, first in first out, and the pause after a quota
 * refusal: a refused task goes back to the front, and nothing is created until
 * the pause (doubling per refusal, reset by a success) ends or a slot frees.
 */
export class TaskQueue<T> {
  private readonly items: T[] = [];
  private readonly clock: Clock;
  private readonly initialDelayMs: number;
  private readonly onResume: () => void;
  private delayMs: number;
  private pausedUntil = 0;
  private timer: Timer | undefined;

  constructor(options: TaskQueueOptions) {
    this.clock = options.clock;
    this.initialDelayMs = options.requeueDelayMs;
    this.delayMs = options.requeueDelayMs;
    this.onResume = options.onResume;
  }

  get length(): number {
    return this.items.length;
  }

  /** The items in order, as a copy: taking one while iterating is safe. */
  snapshot(): T[] {
    return [...this.items];
  }

  push(item: T): void {
    this.items.push(item);
  }

  has(item: T): boolean {
    return this.items.includes(item);
  }

  /** Takes the item out; whether it was queued. */
  remove(item: T): boolean {
    const index = this.items.indexOf(item);
    if (index < 0) return false;
    this.items.splice(index, 1);
    return true;
  }

  /** Within a pause after a refusal. */
  get paused(): boolean {
    return this.clock.now() < this.pausedUntil;
  }

  /** The pause the next refusal starts. Milliseconds. */
  get nextDelayMs(): number {
    return this.delayMs;
  }

  /** A refused item back to the front, and a pause; returns the pause's length, ms. */
  requeue(item: T): number {
    const delay = this.delayMs;
    this.items.unshift(item);
    this.pausedUntil = this.clock.now() + delay;
    this.timer?.cancel();
    this.timer = this.clock.setTimeout(() => {
      this.pausedUntil = 0;
      this.onResume();
    }, delay);
    this.delayMs = Math.min(this.delayMs * 2, MAX_REQUEUE_MS);
    return delay;
  }

  /** A create succeeded: the next refusal pauses for the first delay again. */
  resetBackoff(): void {
    this.delayMs = this.initialDelayMs;
  }

  /** A slot freed, which frees quota too: the pause ends now (its timer still fires, harmlessly). */
  endPause(): void {
    this.pausedUntil = 0;
  }

  close(): void {
    this.timer?.cancel();
  }
}
