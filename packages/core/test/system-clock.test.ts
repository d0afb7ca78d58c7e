import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../src/clock.js';

// Node fires a setTimeout of more than 2^31−1 ms after 1 ms (the fake timers do the same).
describe('systemClock.setTimeout', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('waits a delay above 2^31−1 ms in steps and fires it on time, never early', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const delay = 2 ** 31 + 5000;
    let firedAt: number | undefined;
    systemClock.setTimeout(() => (firedAt = performance.now()), delay);
    const start = performance.now();
    vi.advanceTimersByTime(1000);
    expect(firedAt).toBeUndefined();
    vi.advanceTimersByTime(delay - 1001);
    expect(firedAt).toBeUndefined();
    vi.advanceTimersByTime(1);
    expect(firedAt! - start).toBe(delay);
  });

  it('cancel() stops a long timer in any of its steps', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    let fired = false;
    const timer = systemClock.setTimeout(() => (fired = true), 2 ** 32);
    vi.advanceTimersByTime(2 ** 31);
    timer.cancel();
    vi.advanceTimersByTime(2 ** 32);
    expect(fired).toBe(false);
  });

  it('a NaN or negative delay fires at once, not never', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const fired: string[] = [];
    systemClock.setTimeout(() => fired.push('nan'), Number.NaN);
    systemClock.setTimeout(() => fired.push('negative'), -5);
    vi.advanceTimersByTime(0);
    expect(fired).toEqual(['nan', 'negative']);
  });
});
