import { systemClock, type Clock, type Timer } from './clock.js';

/** What a {@link DelayQueue} takes. */
export interface DelayQueueOptions<K> {
  /** Where delays are counted. Default the system clock. */
  clock?: Clock;
  /**
   * What is done for a key when its time comes: once per {@link DelayQueue.schedule}
   * that was not replaced or cancelled first. Keys due together run in the
   * order they fell due, ties in the order they were scheduled. It may
   * schedule or cancel any key, its own included; a key it schedules runs in a
   * later turn, never in the same one. A throw reaches the clock like a timer
   * callback's; the keys still due run in the next turn.
   */
  run(key: K): void;
}

interface Entry<K> {
  key: K;
  /** Monotonic milliseconds of the clock. */
  due: number;
  seq: number;
}

const before = <K>(a: Entry<K>, b: Entry<K>) => a.due < b.due || (a.due === b.due && a.seq < b.seq);

/**
 * "Do X for key K after T": at most one pending run per key, on one clock
 * timer for the earliest key. Scheduling a key again replaces its time, which
 * may be later than the one it replaces; cancelling drops it. Keys are
 * compared as Map keys are (`SameValueZero`).
 */
export class DelayQueue<K> {
  private readonly clock: Clock;
  private readonly run: (key: K) => void;
  /** The live entry of each pending key. */
  private readonly entries = new Map<K, Entry<K>>();
  /** A min-heap by (due, seq); entries replaced or cancelled stay until they reach the top or a rebuild. */
  private heap: Entry<K>[] = [];
  private timer: Timer | undefined;
  private armedFor: number | undefined;
  private seq = 0;
  private closed = false;

  constructor(options: DelayQueueOptions<K>) {
    this.clock = options.clock ?? systemClock;
    this.run = options.run;
  }

  /** Keys pending. */
  get size(): number {
    return this.entries.size;
  }

  /** Whether `key` is pending. */
  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** Milliseconds of clock time until `key` runs (0 when overdue); undefined when it is not pending. */
  dueIn(key: K): number | undefined {
    const entry = this.entries.get(key);
    return entry === undefined ? undefined : Math.max(0, entry.due - this.clock.now());
  }

  /** Runs `key` after `delayMs` milliseconds (≤ 0: in the next turn), replacing the time it had. Ignored once closed. */
  schedule(key: K, delayMs: number): void {
    if (this.closed) return;
    const entry: Entry<K> = { key, due: this.clock.now() + Math.max(0, delayMs), seq: this.seq++ };
    this.entries.set(key, entry);
    this.push(entry);
    this.arm();
  }

  /** Drops `key`'s pending run; returns whether it had one. */
  cancel(key: K): boolean {
    if (!this.entries.delete(key)) return false;
    this.arm();
    return true;
  }

  /** Drops every pending run and its timer; later calls to {@link schedule} are ignored. */
  close(): void {
    this.closed = true;
    this.entries.clear();
    this.heap = [];
    this.timer?.cancel();
    this.timer = undefined;
    this.armedFor = undefined;
  }

  private isLive(entry: Entry<K>): boolean {
    return this.entries.get(entry.key) === entry;
  }

  /** One clock timer for the earliest live entry; none when nothing is pending (a system timer keeps the process alive). */
  private arm(): void {
    while (this.heap.length > 0 && !this.isLive(this.heap[0]!)) this.pop();
    // Replacements leave stale entries behind: rebuild once they outnumber the live ones.
    if (this.heap.length > 2 * this.entries.size + 16) this.rebuild();
    const top = this.heap[0];
    if (top !== undefined && this.timer !== undefined && this.armedFor === top.due) return;
    this.timer?.cancel();
    this.timer = undefined;
    this.armedFor = undefined;
    if (top === undefined || this.closed) return;
    this.armedFor = top.due;
    this.timer = this.clock.setTimeout(() => this.fire(), top.due - this.clock.now());
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = undefined;
    const now = this.clock.now();
    // Keys scheduled by a run wait for the next turn, so a key that reschedules itself at 0 cannot spin here.
    const turn = this.seq;
    try {
      for (;;) {
        const top = this.heap[0];
        if (top === undefined || this.closed) break;
        if (!this.isLive(top)) {
          this.pop();
          continue;
        }
        if (top.due > now || top.seq >= turn) break;
        this.pop();
        this.entries.delete(top.key);
        this.run(top.key);
      }
    } finally {
      this.arm();
    }
  }

  private rebuild(): void {
    this.heap = [...this.entries.values()].sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
  }

  private push(entry: Entry<K>): void {
    const heap = this.heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop()!;
    if (heap.length === 0) return;
    heap[0] = last;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < heap.length && before(heap[left]!, heap[least]!)) least = left;
      if (right < heap.length && before(heap[right]!, heap[least]!)) least = right;
      if (least === i) return;
      [heap[i], heap[least]] = [heap[least]!, heap[i]!];
      i = least;
    }
  }
}
