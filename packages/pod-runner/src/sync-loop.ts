import type { Clock } from '@rollcall/core';
import { Backoff, DelayQueue } from '@rollcall/core/spi';

/** What a {@link SyncLoop} takes. */
export interface SyncLoopOptions {
  clock: Clock;
  /**
   * Brings one task to what its record and pods say it should be. Resolves with
   * the milliseconds until it must look again (its earliest deadline), or
   * undefined when nothing is due until something changes. A rejection retries
   * the task with a per-task backoff.
   */
  sync(taskId: string): Promise<number | undefined>;
  /** Tasks synced at once, at most. Default 8. */
  concurrency?: number;
  /** A sync that failed, before its retry is scheduled. */
  onError?(taskId: string, err: unknown): void;
  /** The first retry's delay after a failed sync; doubles per failure up to 60 s. Milliseconds. Default 500. */
  retryInitialMs?: number;
}

/** Syncs started in one turn of the event loop at most; the rest start at the next turns, after I/O and timers. */
const SYNCS_PER_TURN = 64;

/**
 * The pod runner's one loop (the Kubernetes Job controller's shape): event
 * handlers only {@link enqueue} a task id; one `sync(id)` decides and acts.
 * Level-triggered: a sync reads the current state, so any number of
 * enqueues before it runs collapse into one. At most one sync per id at a
 * time; an enqueue during its sync runs it once more right after. Every delay
 * — deadlines, retries — is one {@link DelayQueue} on the injected clock.
 */
export class SyncLoop {
  private readonly queue: DelayQueue<string>;
  private readonly concurrency: number;
  /** Ids whose time came while the loop was at its concurrency: run in arrival order as syncs end. */
  private readonly ready: string[] = [];
  private readonly readySet = new Set<string>();
  /** Ids syncing now. */
  private readonly running = new Map<string, Promise<void>>();
  /** Ids enqueued during their own sync, with the earliest delay asked for (ms from the time asked, as a due time). */
  private readonly again = new Map<string, number>();
  private readonly backoffs = new Map<string, Backoff>();
  private closed = false;
  /** A turn to start the ready syncs is asked for. */
  private kicked = false;
  /** Syncs started in this turn of the event loop (reset at the next one). */
  private startedThisTurn = 0;

  constructor(private readonly options: SyncLoopOptions) {
    this.concurrency = options.concurrency ?? 8;
    this.queue = new DelayQueue({ clock: options.clock, run: (id) => this.due(id) });
  }

  /**
   * Asks for a sync of `taskId` within `delayMs` (default now). Never postpones
   * one already due sooner: a later ask is kept only when nothing earlier is
   * pending. During the task's own sync it runs once more after it.
   */
  enqueue(taskId: string, delayMs = 0): void {
    if (this.closed) return;
    if (this.running.has(taskId)) {
      const due = this.options.clock.now() + Math.max(0, delayMs);
      this.again.set(taskId, Math.min(this.again.get(taskId) ?? Infinity, due));
      return;
    }
    if (this.readySet.has(taskId)) return;
    if (delayMs <= 0) return this.now(taskId);
    const pending = this.queue.dueIn(taskId);
    if (pending !== undefined && pending <= delayMs) return;
    this.queue.schedule(taskId, delayMs);
  }

  /**
   * A sync due now runs at the next turn of the event loop, not through the
   * clock: under a test's manual clock only deadlines wait for it to advance,
   * as the watches and the API answers that enqueue keep real time.
   */
  private now(taskId: string): void {
    this.queue.cancel(taskId);
    this.readySet.add(taskId);
    this.ready.push(taskId);
    this.kick();
  }

  /** Starts the ready syncs at the next turn of the event loop. */
  private kick(): void {
    if (this.kicked) return;
    this.kicked = true;
    setImmediate(() => {
      this.kicked = false;
      this.startReady();
    });
  }

  /** Drops a task's pending sync and retry state (its record is gone). A sync in flight finishes. */
  forget(taskId: string): void {
    this.queue.cancel(taskId);
    this.again.delete(taskId);
    this.backoffs.delete(taskId);
    if (this.readySet.delete(taskId)) this.ready.splice(this.ready.indexOf(taskId), 1);
  }

  /** Ids syncing, waiting for a slot, or scheduled. */
  get pending(): number {
    return this.running.size + this.ready.length + this.queue.size;
  }

  /** Stops every pending sync; resolves once the syncs in flight have ended. Enqueues after it are ignored. */
  async close(): Promise<void> {
    this.closed = true;
    this.queue.close();
    this.ready.length = 0;
    this.readySet.clear();
    this.again.clear();
    await Promise.allSettled([...this.running.values()]);
  }

  private due(taskId: string): void {
    if (this.closed || this.running.has(taskId)) return;
    if (this.running.size >= this.concurrency) {
      if (!this.readySet.has(taskId)) {
        this.readySet.add(taskId);
        this.ready.push(taskId);
      }
      return;
    }
    this.start(taskId);
  }

  private start(taskId: string): void {
    if (this.startedThisTurn++ === 0) setImmediate(() => (this.startedThisTurn = 0));
    const run = this.runOnce(taskId).finally(() => {
      this.running.delete(taskId);
      const again = this.again.get(taskId);
      this.again.delete(taskId);
      if (again !== undefined && !this.closed) this.enqueue(taskId, again - this.options.clock.now());
      this.startReady();
    });
    this.running.set(taskId, run);
  }

  private startReady(): void {
    while (!this.closed && this.running.size < this.concurrency && this.ready.length > 0) {
      // syncs that never wait on I/O (a new term's first pass over thousands of queued tasks) would otherwise
      // follow each other in one turn for seconds: timers due meanwhile (request deadlines) fire before the
      // answers they bound are read, and a create answered in time is taken as lost (issue 35)
      if (this.startedThisTurn >= SYNCS_PER_TURN) return this.kick();
      const next = this.ready.shift()!;
      this.readySet.delete(next);
      if (!this.running.has(next)) this.start(next);
    }
  }

  private async runOnce(taskId: string): Promise<void> {
    try {
      const wakeInMs = await this.options.sync(taskId);
      this.backoffs.delete(taskId);
      if (wakeInMs !== undefined) this.enqueue(taskId, wakeInMs);
    } catch (err) {
      this.options.onError?.(taskId, err);
      let backoff = this.backoffs.get(taskId);
      if (!backoff) {
        backoff = new Backoff({ clock: this.options.clock, initialMs: this.options.retryInitialMs ?? 500, maxMs: 60_000 });
        this.backoffs.set(taskId, backoff);
      }
      this.enqueue(taskId, backoff.next());
    }
  }
}
