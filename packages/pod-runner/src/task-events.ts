import type { TaskStatus } from './task.js';
import { isTerminal } from './task.js';

interface Subscriber {
  taskId: string | undefined;
  queue: TaskStatus[];
  wake: (() => void) | undefined;
  done: boolean;
}

/**
 * Fans task status changes out to `events()` iterators. Each iterator has its
 * own queue, so a slow consumer misses nothing; one for a single task ends after
 * its terminal status, all end when the runner closes.
 */
export class TaskEventHub {
  private readonly subscribers = new Set<Subscriber>();

  publish(status: TaskStatus): void {
    for (const subscriber of this.subscribers) {
      if (subscriber.taskId !== undefined && subscriber.taskId !== status.taskId) continue;
      subscriber.queue.push(structuredClone(status));
      if (subscriber.taskId !== undefined && isTerminal(status)) subscriber.done = true;
      subscriber.wake?.();
    }
  }

  /** Statuses from now on (of one task, starting with `current`, when `taskId` is given). */
  subscribe(taskId: string | undefined, current: TaskStatus | undefined): AsyncIterableIterator<TaskStatus> {
    const subscriber: Subscriber = { taskId, queue: current ? [structuredClone(current)] : [], wake: undefined, done: current !== undefined && isTerminal(current) };
    this.subscribers.add(subscriber);
    const hub = this;
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      async next(): Promise<IteratorResult<TaskStatus>> {
        for (;;) {
          const value = subscriber.queue.shift();
          if (value) return { value, done: false };
          if (subscriber.done) {
            hub.subscribers.delete(subscriber);
            return { value: undefined, done: true };
          }
          await new Promise<void>((resolve) => (subscriber.wake = resolve));
          subscriber.wake = undefined;
        }
      },
      async return(): Promise<IteratorResult<TaskStatus>> {
        subscriber.done = true;
        subscriber.queue.length = 0;
        hub.subscribers.delete(subscriber);
        return { value: undefined, done: true };
      },
    };
  }

  /** Ends every iterator once it has drained what it was given. */
  close(): void {
    for (const subscriber of this.subscribers) {
      subscriber.done = true;
      subscriber.wake?.();
    }
  }
}
