import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/manual-clock.js';
import { DelayQueue } from '../src/spi.js';
import { seeded } from '../src/seeded.js';

/** A queue on a manual clock that records each run as `key@time`. */
function recorded<K = string>(run?: (key: K, queue: DelayQueue<K>) => void) {
  const clock = new ManualClock();
  const runs: string[] = [];
  const queue: DelayQueue<K> = new DelayQueue<K>({
    clock,
    run: (key) => {
      runs.push(`${String(key)}@${clock.now()}`);
      run?.(key, queue);
    },
  });
  return { clock, runs, queue };
}

/** Counts the clock's pending timers by scheduling nothing: a queue with no keys must hold none. */
function pendingTimers(clock: ManualClock): number {
  return (clock as unknown as { timers: unknown[] }).timers.length;
}

describe('DelayQueue', () => {
  it('runs each key once after its delay, in due order', async () => {
    const { clock, runs, queue } = recorded();
    queue.schedule('b', 200);
    queue.schedule('a', 100);
    queue.schedule('c', 300);
    expect(queue.size).toBe(3);
    await clock.advance(99);
    expect(runs).toEqual([]);
    await clock.advance(1000);
    expect(runs).toEqual(['a@100', 'b@200', 'c@300']);
    expect(queue.size).toBe(0);
  });

  it('keys due together run in the order they were scheduled', async () => {
    const { clock, runs, queue } = recorded();
    for (const key of ['x', 'y', 'z', 'w']) queue.schedule(key, 50);
    await clock.advance(50);
    expect(runs).toEqual(['x@50', 'y@50', 'z@50', 'w@50']);
  });

  it('scheduling a key again replaces its time, later or earlier', async () => {
    const { clock, runs, queue } = recorded();
    queue.schedule('a', 100);
    queue.schedule('b', 100);
    queue.schedule('a', 300);
    queue.schedule('b', 20);
    expect(queue.size).toBe(2);
    expect(queue.dueIn('a')).toBe(300);
    await clock.advance(1000);
    expect(runs).toEqual(['b@20', 'a@300']);
  });

  it('cancel drops the pending run and says whether there was one', async () => {
    const { clock, runs, queue } = recorded();
    queue.schedule('a', 100);
    expect(queue.has('a')).toBe(true);
    expect(queue.cancel('a')).toBe(true);
    expect(queue.cancel('a')).toBe(false);
    expect(queue.has('a')).toBe(false);
    expect(queue.dueIn('a')).toBeUndefined();
    await clock.advance(1000);
    expect(runs).toEqual([]);
  });

  it('holds no clock timer once nothing is pending (a system timer would keep the process alive)', async () => {
    const { clock, queue } = recorded();
    queue.schedule('a', 100);
    queue.schedule('b', 200);
    expect(pendingTimers(clock)).toBe(1);
    queue.cancel('a');
    queue.cancel('b');
    expect(pendingTimers(clock)).toBe(0);
    queue.schedule('c', 10);
    await clock.advance(10);
    expect(pendingTimers(clock)).toBe(0);
  });

  it('close drops everything and ignores later schedules', async () => {
    const { clock, runs, queue } = recorded();
    queue.schedule('a', 100);
    queue.close();
    queue.schedule('b', 10);
    expect(queue.size).toBe(0);
    expect(pendingTimers(clock)).toBe(0);
    await clock.advance(1000);
    expect(runs).toEqual([]);
  });

  it('a run that reschedules its own key at 0 runs again in a later turn, not in a loop', async () => {
    let again = 3;
    const { clock, runs, queue } = recorded<string>((key, q) => {
      if (again-- > 0) q.schedule(key, 0);
    });
    queue.schedule('self', 10);
    await clock.advance(10);
    expect(runs).toEqual(['self@10', 'self@10', 'self@10', 'self@10']);
    expect(queue.size).toBe(0);
  });

  it('a run may cancel or replace a key due in the same turn', async () => {
    const { clock, runs, queue } = recorded<string>((key, q) => {
      if (key === 'a') {
        q.cancel('b');
        q.schedule('c', 5);
      }
    });
    queue.schedule('a', 10);
    queue.schedule('b', 10);
    queue.schedule('c', 10);
    await clock.advance(10);
    expect(runs).toEqual(['a@10']);
    await clock.advance(5);
    expect(runs).toEqual(['a@10', 'c@15']);
  });

  it('a run that throws leaves the keys still due to the next turn', async () => {
    const clock = new ManualClock();
    const runs: string[] = [];
    const queue = new DelayQueue<string>({
      clock,
      run: (key) => {
        runs.push(key);
        if (key === 'boom') throw new Error('boom');
      },
    });
    queue.schedule('boom', 10);
    queue.schedule('after', 10);
    await expect(clock.advance(10)).rejects.toThrow('boom');
    await clock.advance(0);
    expect(runs).toEqual(['boom', 'after']);
  });

  it('any key a Map takes: objects by identity', async () => {
    const clock = new ManualClock();
    const seen: object[] = [];
    const queue = new DelayQueue<object>({ clock, run: (key) => seen.push(key) });
    const a = { id: 1 };
    const b = { id: 1 };
    queue.schedule(a, 5);
    queue.schedule(b, 5);
    await clock.advance(5);
    expect(seen).toEqual([a, b]);
    expect(seen[0]).toBe(a);
  });
});


/** The reference: a map of key → (due, order), scanned in full at each step. */
class Model {
  now = 0;
  private order = 0;
  readonly pending = new Map<string, { due: number; order: number }>();
  readonly runs: string[] = [];
  schedule(key: string, delayMs: number): void {
    this.pending.set(key, { due: this.now + Math.max(0, delayMs), order: this.order++ });
  }
  cancel(key: string): boolean {
    return this.pending.delete(key);
  }
  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      const next = [...this.pending].filter(([, p]) => p.due <= target).sort(([, a], [, b]) => a.due - b.due || a.order - b.order)[0];
      if (!next) break;
      this.pending.delete(next[0]);
      this.now = Math.max(this.now, next[1].due);
      this.runs.push(`${next[0]}@${this.now}`);
    }
    this.now = target;
  }
}

describe('DelayQueue against a reference model', () => {
  const SEEDS = 60;
  const STEPS = 150;
  it(`${SEEDS} random sequences of schedule, replace, cancel and advance`, async () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = seeded(seed);
      const pick = (n: number) => Math.floor(random() * n);
      const { clock, runs, queue } = recorded();
      const model = new Model();
      const trace: string[] = [];
      for (let step = 0; step < STEPS; step++) {
        const key = `k${pick(6)}`;
        const op = random();
        if (op < 0.45) {
          // Delays that collide often, 0 and negatives included.
          const delay = [-5, 0, 10, 10, 25, 50, 100, 100, 250][pick(9)]!;
          trace.push(`schedule ${key} ${delay}`);
          queue.schedule(key, delay);
          model.schedule(key, delay);
        } else if (op < 0.6) {
          trace.push(`cancel ${key}`);
          expect(queue.cancel(key), `seed ${seed}: ${trace.join('; ')}`).toBe(model.cancel(key));
        } else {
          const ms = [0, 1, 9, 10, 30, 100, 400][pick(7)]!;
          trace.push(`advance ${ms}`);
          await clock.advance(ms);
          model.advance(ms);
        }
        const context = `seed ${seed}: ${trace.join('; ')}`;
        expect(runs, context).toEqual(model.runs);
        expect(queue.size, context).toBe(model.pending.size);
        for (const [k, p] of model.pending) expect(queue.dueIn(k), context).toBe(Math.max(0, p.due - model.now));
      }
      await clock.advance(1000);
      model.advance(1000);
      expect(runs, `seed ${seed}: ${trace.join('; ')}`).toEqual(model.runs);
      expect(pendingTimers(clock), `seed ${seed}`).toBe(0);
    }
  });
});
