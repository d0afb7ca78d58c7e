import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/manual-clock.js';
import { InvalidArgumentError } from '../src/errors.js';
import { Backoff } from '../src/spi.js';

/** A random source that returns the given values in turn, then repeats the last. */
const sequence = (...values: number[]) => {
  let i = 0;
  return () => values[Math.min(i++, values.length - 1)]!;
};

describe('Backoff', () => {
  it('grows by the factor from the initial delay up to the cap, without jitter', () => {
    const backoff = new Backoff({ initialMs: 100, factor: 2, maxMs: 1000, jitter: 0 });
    expect(Array.from({ length: 7 }, () => backoff.next())).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
    expect(backoff.failures).toBe(7);
  });

  it('a factor other than 2', () => {
    const backoff = new Backoff({ initialMs: 10, factor: 3, maxMs: 200, jitter: 0 });
    expect(Array.from({ length: 5 }, () => backoff.next())).toEqual([10, 30, 90, 200, 200]);
  });

  it('reset after a success starts again from the initial delay', () => {
    const backoff = new Backoff({ initialMs: 100, maxMs: 1000, jitter: 0 });
    backoff.next();
    backoff.next();
    backoff.next();
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect([backoff.next(), backoff.next()]).toEqual([100, 200]);
  });

  it('jitter takes up to its fraction off each delay, as the injected random source says', () => {
    const backoff = new Backoff({ initialMs: 1000, factor: 2, maxMs: 4000, jitter: 0.5, random: sequence(0, 0.5, 0.999, 0.2) });
    const [a, b, c, d] = [backoff.next(), backoff.next(), backoff.next(), backoff.next()];
    expect(a).toBe(1000);
    expect(b).toBe(2000 * 0.75);
    expect(c).toBeCloseTo(4000 * (1 - 0.4995), 9);
    expect(d).toBe(4000 * 0.9);
  });

  it('with the default random source, every delay lies in [d·(1−jitter), d] and never above the cap', () => {
    const backoff = new Backoff({ initialMs: 50, maxMs: 3000, jitter: 0.3 });
    let base = 50;
    for (let i = 0; i < 200; i++) {
      const delay = backoff.next();
      expect(delay).toBeGreaterThanOrEqual(base * 0.7);
      expect(delay).toBeLessThanOrEqual(base);
      expect(delay).toBeLessThanOrEqual(3000);
      base = Math.min(base * 2, 3000);
    }
  });

  it('defaults: 500 ms doubling to 30 s, 20 % jitter', () => {
    const backoff = new Backoff({ random: () => 0 });
    const delays = Array.from({ length: 9 }, () => backoff.next());
    expect(delays).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    expect(new Backoff({ random: () => 1 }).next()).toBeCloseTo(400, 9);
  });

  it('an initial delay of 0 stays 0', () => {
    const backoff = new Backoff({ initialMs: 0, maxMs: 10 });
    expect([backoff.next(), backoff.next()]).toEqual([0, 0]);
  });

  it('schedule waits the next delay on the clock', async () => {
    const clock = new ManualClock();
    const backoff = new Backoff({ clock, initialMs: 100, maxMs: 1000, jitter: 0 });
    const fired: number[] = [];
    backoff.schedule(() => fired.push(clock.now()));
    await clock.advance(99);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual([100]);
    const timer = backoff.schedule(() => fired.push(clock.now()));
    timer.cancel();
    await clock.advance(1000);
    expect(fired).toEqual([100]);
    expect(backoff.failures).toBe(2);
  });

  it('refuses options that make no backoff', () => {
    expect(() => new Backoff({ initialMs: -1 })).toThrow(InvalidArgumentError);
    expect(() => new Backoff({ factor: 0.5 })).toThrow(/factor/);
    expect(() => new Backoff({ initialMs: 100, maxMs: 50 })).toThrow(/maxMs/);
    expect(() => new Backoff({ jitter: 1.5 })).toThrow(/jitter/);
    expect(() => new Backoff({ initialMs: Number.NaN })).toThrow(/initialMs/);
  });
});
