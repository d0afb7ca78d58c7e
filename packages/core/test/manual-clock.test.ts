import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/manual-clock.js';

describe('ManualClock', () => {
  it('keeps a jump() made by a timer during advance(): time never goes back', async () => {
    const clock = new ManualClock();
    clock.setTimeout(() => clock.jump(1_000), 50);
    await clock.advance(100);
    expect(clock.now()).toBe(1_050);
  });

  it('fires due timers in order and ends at the target', async () => {
    const clock = new ManualClock();
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(clock.now()), 30);
    clock.setTimeout(() => fired.push(clock.now()), 10);
    clock.setTimeout(() => fired.push(clock.now()), 200);
    await clock.advance(100);
    expect(fired).toEqual([10, 30]);
    expect(clock.now()).toBe(100);
  });
});
