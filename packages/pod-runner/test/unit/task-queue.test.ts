import { describe, expect, it } from 'vitest';
import { ManualClock } from '@rollcall/core/testing';
import { MAX_REQUEUE_MS, TaskQueue } from '../../src/task-queue.js';

function queue(requeueDelayMs = 1000) {
  const clock = new ManualClock();
  const resumed: number[] = [];
  const q = new TaskQueue<string>({ clock, requeueDelayMs, onResume: () => resumed.push(clock.now()) });
  return { clock, q, resumed };
}

describe('TaskQueue', () => {
  it('is first in, first out, and an item taken out is gone', () => {
    const { q } = queue();
    for (const item of ['a', 'b', 'c']) q.push(item);
    expect(q.remove('b')).toBe(true);
    expect(q.remove('b')).toBe(false);
    expect(q.snapshot()).toEqual(['a', 'c']);
    expect(q.has('a')).toBe(true);
    expect(q.length).toBe(2);
  });

  it('puts a refused item back in front and pauses for the delay, then resumes once', async () => {
    const { clock, q, resumed } = queue(1000);
    q.push('b');
    expect(q.requeue('a')).toBe(1000);
    expect(q.snapshot()).toEqual(['a', 'b']);
    expect(q.paused).toBe(true);
    await clock.advance(999);
    expect(q.paused).toBe(true);
    expect(resumed).toEqual([]);
    await clock.advance(1);
    expect(q.paused).toBe(false);
    expect(resumed).toEqual([1000]);
  });

  it('doubles the pause per refusal up to 30 s, and a success starts again from the first delay', async () => {
    const { q } = queue(1000);
    const pauses = Array.from({ length: 7 }, () => q.requeue('a'));
    expect(pauses).toEqual([1000, 2000, 4000, 8000, 16_000, MAX_REQUEUE_MS, MAX_REQUEUE_MS]);
    q.resetBackoff();
    expect(q.nextDelayMs).toBe(1000);
  });

  it('a second refusal replaces the first pause: one resume, at the end of the later one', async () => {
    const { clock, q, resumed } = queue(1000);
    q.requeue('a');
    await clock.advance(500);
    q.requeue('a'); // 2000 from now
    await clock.advance(1999);
    expect(resumed).toEqual([]);
    await clock.advance(1);
    expect(resumed).toEqual([2500]);
  });

  it('ends the pause at once when a slot frees', () => {
    const { q } = queue(1000);
    q.requeue('a');
    q.endPause();
    expect(q.paused).toBe(false);
  });

  it('resumes nothing after close', async () => {
    const { clock, q, resumed } = queue(1000);
    q.requeue('a');
    q.close();
    await clock.advance(5000);
    expect(resumed).toEqual([]);
  });
});
