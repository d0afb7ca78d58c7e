import type { Clock } from '@rollcall/core';
import { Backoff } from '@rollcall/core/spi';
import type { TaskRecordBody } from './task-record.js';

/** Where a queued task stands in line: by when it joined (its submit, or a retry's end of backoff), then its submit sequence, then its id. */
export interface QueuePlace {
  /** Wall-clock ms the task joined the queue. */
  joinedAt: number;
  /** The submit sequence within a millisecond (submit-order.ts); 0 when unknown. */
  seq: number;
}

/** A queued record's place: its retry's end of backoff, else its submit; then its submit sequence. */
export function queuePlace(body: TaskRecordBody): QueuePlace {
  return { joinedAt: body.retryAt ?? Date.parse(body.submittedAt), seq: body.seq };
}

/** What {@link TaskAdmission} takes. */
export interface TaskAdmissionOptions {
  clock: Clock;
  /** Pods pending or running at once, all task types. */
  total: number;
  /** Pods pending or running at once, per task type. */
  perType: Readonly<Record<string, number>>;
  /** The first pause after a quota refusal; doubles per refusal up to 30 s, reset by a create. Milliseconds. */
  requeueDelayMs: number;
  /** Jitter of the pause, 0 to 1. Default 0.2. */
  jitter?: number;
}

interface Queued extends QueuePlace {
  id: string;
  taskType: string;
}

const inLine = (a: Queued, b: Queued) => a.joinedAt - b.joinedAt || a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Which queued tasks may have a pod now: the capacity (a total and per-type
 * slots) taken by live pods and creates in flight, given to queued tasks in
 * line order — a task whose type is at its limit lets the next one by — and
 * nothing while a quota refusal's pause runs. A pure account, no timer: its
 * owner syncs the ids {@link recompute} returns and wakes it when
 * {@link pauseEndsInMs} says.
 */
export class TaskAdmission {
  private readonly queued = new Map<string, Queued>();
  private line: Queued[] | undefined = [];
  /** Ids holding a slot (a live pod, a create in flight), with their type. */
  private readonly holding = new Map<string, string>();
  private admitted = new Set<string>();
  private pausedUntil = 0;
  private readonly pause: Backoff;

  constructor(private readonly options: TaskAdmissionOptions) {
    this.pause = new Backoff({ clock: options.clock, initialMs: options.requeueDelayMs, maxMs: Math.max(30_000, options.requeueDelayMs), jitter: options.jitter ?? 0.2 });
  }

  /** Puts a task in line, or moves it (a retry joins again at its end of backoff). */
  enqueue(id: string, taskType: string, place: QueuePlace): void {
    this.queued.set(id, { id, taskType, ...place });
    this.line = undefined;
  }

  /** Takes a task out of line (its pod was asked for, it was cancelled, it ended). */
  dequeue(id: string): void {
    if (this.queued.delete(id)) this.line = undefined;
    this.admitted.delete(id);
  }

  /** A live pod or a create in flight holds a slot of its type. Idempotent per id. */
  occupy(id: string, taskType: string): void {
    this.holding.set(id, taskType);
    this.dequeue(id);
  }

  /** The task's pod is gone or ended: its slot is free. A freed slot frees quota too: a pause ends. */
  release(id: string): void {
    if (this.holding.delete(id)) this.pausedUntil = 0;
  }

  /** Whether `id` may have its pod created now (as of the last {@link recompute}). */
  admits(id: string): boolean {
    return this.admitted.has(id);
  }

  /** Queued tasks in line order. */
  get waiting(): number {
    return this.queued.size;
  }

  /** Slots taken. */
  get occupied(): number {
    return this.holding.size;
  }

  /** A create was refused for quota: nothing is admitted until the pause ends or a slot frees. Returns the pause, ms. */
  refused(): number {
    const delay = this.pause.next();
    this.pausedUntil = this.options.clock.now() + delay;
    this.admitted.clear();
    return delay;
  }

  /** A create succeeded: the next refusal pauses for the first delay again. */
  created(): void {
    this.pause.reset();
  }

  /** Milliseconds until a pause ends; undefined when none runs. */
  pauseEndsInMs(): number | undefined {
    const left = this.pausedUntil - this.options.clock.now();
    return left > 0 ? left : undefined;
  }

  /**
   * Gives the free slots to the tasks in line and returns the ids admitted now
   * that were not before (to be synced). Call after any change above.
   */
  recompute(): string[] {
    if (this.pauseEndsInMs() !== undefined) {
      this.admitted.clear();
      return [];
    }
    let room = this.options.total - this.holding.size;
    const typeRoom = new Map<string, number>();
    for (const [type, limit] of Object.entries(this.options.perType)) typeRoom.set(type, limit);
    for (const type of this.holding.values()) if (typeRoom.has(type)) typeRoom.set(type, typeRoom.get(type)! - 1);
    const next = new Set<string>();
    this.line ??= [...this.queued.values()].sort(inLine);
    for (const task of this.line) {
      if (room <= 0) break;
      const left = typeRoom.get(task.taskType);
      if (left !== undefined && left <= 0) continue;
      next.add(task.id);
      room -= 1;
      if (left !== undefined) typeRoom.set(task.taskType, left - 1);
    }
    const fresh = [...next].filter((id) => !this.admitted.has(id));
    this.admitted = next;
    return fresh;
  }
}
