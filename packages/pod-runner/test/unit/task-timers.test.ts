import { describe, expect, it } from 'vitest';
import { ManualClock } from '@rollcall/core/testing';
import { newTaskState } from '../../src/task-state.js';
import { TaskTimers } from '../../src/task-timers.js';
import { status, T0, timeouts } from './fixtures.js';

function setup() {
  const clock = new ManualClock(T0);
  const fired: string[] = [];
  const state = newTaskState(status(), timeouts(), undefined);
  return { clock, timers: new TaskTimers(clock), state, fired };
}

describe('TaskTimers: deadlines from the pod\'s wall-clock timestamps on the injected clock', () => {
  it('fires the pending timer at its wall-clock deadline', async () => {
    const { clock, timers, state, fired } = setup();
    timers.armPending(state, 'unschedulable', T0 + 5000, (cause) => fired.push(cause));
    await clock.advance(4999);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual(['unschedulable']);
  });

  it('fires at once for a deadline already past (a runner that restarts late)', async () => {
    const { clock, timers, state, fired } = setup();
    await clock.advance(10_000);
    timers.armPending(state, 'scheduling', T0 + 5000, (cause) => fired.push(cause));
    await clock.advance(0);
    expect(fired).toEqual(['scheduling']);
  });

  it('converts the deadline once: a wall-clock jump after arming moves it neither way', async () => {
    const { clock, timers, state, fired } = setup();
    timers.armPending(state, 'image-pull', T0 + 5000, (cause) => fired.push(`pending ${cause}`));
    timers.armRun(state, T0 + 8000, () => fired.push('run'));
    clock.skewWall(+3000);
    // seen again with the same cause and deadline: the armed timer stays, not re-armed from the jumped wall clock
    timers.armPending(state, 'image-pull', T0 + 5000, (cause) => fired.push(`again ${cause}`));
    await clock.advance(4999);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual(['pending image-pull']);
    await clock.advance(3000);
    expect(fired).toEqual(['pending image-pull', 'run']);
  });

  it('moves the pending timer when the cause or deadline changes, firing only the new one', async () => {
    const { clock, timers, state, fired } = setup();
    timers.armPending(state, 'scheduling', T0 + 600_000, (cause) => fired.push(cause));
    await clock.advance(1000);
    timers.armPending(state, 'unschedulable', T0 + 2000, (cause) => fired.push(cause));
    await clock.advance(1000);
    expect(fired).toEqual(['unschedulable']);
    await clock.advance(600_000);
    expect(fired).toEqual(['unschedulable']);
  });

  it('arms the run timer once: a running pod seen again keeps its deadline', async () => {
    const { clock, timers, state, fired } = setup();
    timers.armRun(state, T0 + 3000, () => fired.push('first'));
    timers.armRun(state, T0 + 1000, () => fired.push('second'));
    await clock.advance(2999);
    expect(fired).toEqual([]);
    await clock.advance(1);
    expect(fired).toEqual(['first']);
  });

  it('clears both', async () => {
    const { clock, timers, state, fired } = setup();
    timers.armPending(state, 'starting', T0 + 1000, (cause) => fired.push(cause));
    timers.armRun(state, T0 + 1000, () => fired.push('run'));
    timers.clear(state);
    await clock.advance(5000);
    expect(fired).toEqual([]);
    expect(state.timers).toEqual({ pending: undefined, run: undefined });
  });
});

describe('TaskTimers: the Unknown, queue and retry timers', () => {
  it('arms the Unknown bound once: the pod seen Unknown again does not move it', async () => {
    const { clock, timers, state, fired } = setup();
    timers.armUnknown(state, T0 + 1000, () => fired.push('unknown'));
    await clock.advance(500);
    timers.armUnknown(state, T0 + 1500, () => fired.push('moved'));
    await clock.advance(500);
    expect(fired).toEqual(['unknown']);
  });

  it('keeps the queue and retry timers when the runner stops acting on pods, and clears them when the task ends', async () => {
    const { clock, timers, state, fired } = setup();
    timers.armQueue(state, T0 + 1000, () => fired.push('queue'));
    timers.armQueue(state, T0 + 500, () => fired.push('queue moved'));
    timers.armRetry(state, 500, () => fired.push('retry'));
    timers.armUnknown(state, T0 + 200, () => fired.push('unknown'));
    timers.clearPodTimers(state);
    await clock.advance(1000);
    expect(fired).toEqual(['retry', 'queue']);
    // a fired bound is gone: the next wait in the queue arms its own
    timers.armQueue(state, T0 + 2000, () => fired.push('queue again'));
    timers.armRetry(state, 500, () => fired.push('retry again'));
    timers.clear(state);
    await clock.advance(2000);
    expect(fired).toEqual(['retry', 'queue']);
  });
});
