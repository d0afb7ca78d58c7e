import { describe, expect, it } from 'vitest';
import { silentLogger } from '@rollcall/core';
import { ManualClock, settle } from '@rollcall/core/testing';
import { FIRST_REDELIVERY_MS, isThenable, StatusDelivery } from '../../src/status-delivery.js';
import type { TaskStatus } from '../../src/task.js';

const ended: TaskStatus = { taskId: 't1', taskType: 'report', tags: {}, attempt: 1, phase: 'succeeded', reason: 'Completed', podName: 'r-t1-1', template: 'default', submittedAt: '2026-12-07T12:00:00.000Z' };

/** A promise-like that is not a native Promise (another library's, a hand-written one): settles when told. */
function thenable() {
  let settle: { resolve: (v: unknown) => void; reject: (e: unknown) => void } | undefined;
  const value = {
    then(onResolved: (v: unknown) => unknown, onRejected: (e: unknown) => unknown) {
      settle = { resolve: onResolved, reject: onRejected };
      return value;
    },
  };
  return { value, settle: () => settle! };
}

describe('StatusDelivery', () => {
  it('knows a thenable from a plain answer', () => {
    expect(isThenable(Promise.resolve())).toBe(true);
    expect(isThenable({ then: () => undefined })).toBe(true);
    const fn = Object.assign(() => undefined, { then: () => undefined });
    expect(isThenable(fn)).toBe(true);
    for (const plain of [undefined, null, 0, 'then', { then: 1 }, {}]) expect(isThenable(plain)).toBe(false);
  });

  it('a rejecting thenable is delivered again: paused through schedule, handed over again by its owner, acknowledged only when one resolves', async () => {
    const clock = new ManualClock();
    const answers: ReturnType<typeof thenable>[] = [];
    const scheduled: [string, number][] = [];
    const delivery = new StatusDelivery({
      clock,
      logger: silentLogger,
      onStatus: () => {
        const answer = thenable();
        answers.push(answer);
        return answer.value;
      },
      schedule: (id, ms) => void scheduled.push([id, ms]),
    });
    delivery.deliver(ended);
    await settle();
    expect(answers).toHaveLength(1);
    expect(delivery.state('t1')).toBe('pending'); // not acknowledged before the thenable settles
    answers[0]!.settle().reject(new Error('the consumer could not store it'));
    await settle();
    expect(scheduled).toEqual([['t1', FIRST_REDELIVERY_MS]]);
    expect(delivery.state('t1')).toBe('pending');
    delivery.deliver(ended); // before the pause is over: nothing
    expect(answers).toHaveLength(1);
    await clock.advance(FIRST_REDELIVERY_MS);
    // the delivery keeps no timer: nothing is handed over until its owner asks
    expect(answers).toHaveLength(1);
    expect(delivery.state('t1')).toBe('none');
    delivery.deliver(ended);
    expect(answers).toHaveLength(2);
    await settle();
    answers[1]!.settle().resolve(undefined);
    await settle();
    expect(delivery.state('t1')).toBe('acked');
    expect(scheduled.at(-1)).toEqual(['t1', 0]);
    expect(delivery.unacknowledged('t1')).toBe(false);
    delivery.deliver(ended); // acknowledged: not again
    expect(answers).toHaveLength(2);
    delivery.forget('t1');
    expect(delivery.state('t1')).toBe('none');
    delivery.close();
  });

  it('pauses double between refusals; a change on the way is told once; a throw counts as a refusal', async () => {
    const clock = new ManualClock();
    const calls: string[] = [];
    const scheduled: number[] = [];
    const answers: (() => unknown)[] = [
      () => {
        throw new Error('down');
      },
      () => Promise.reject(new Error('still down')),
      () => undefined,
    ];
    const delivery = new StatusDelivery({
      clock,
      logger: silentLogger,
      onStatus: (s) => (calls.push(s.phase), s.phase === 'running' ? Promise.reject(new Error('ignored')) : answers.shift()!()),
      schedule: (_id, ms) => void scheduled.push(ms),
    });
    delivery.notify({ ...ended, phase: 'running' });
    delivery.deliver(ended);
    delivery.deliver(ended); // pausing already: not twice
    expect(calls).toEqual(['running', 'succeeded']);
    expect(scheduled).toEqual([FIRST_REDELIVERY_MS]);
    expect(delivery.pauseLeftMs(ended.taskId)).toBe(FIRST_REDELIVERY_MS);
    await clock.advance(FIRST_REDELIVERY_MS - 1);
    // a sync woken a little early still knows when to look again
    expect(delivery.state(ended.taskId)).toBe('pending');
    expect(delivery.pauseLeftMs(ended.taskId)).toBe(1);
    await clock.advance(1);
    expect(delivery.pauseLeftMs(ended.taskId)).toBeUndefined();
    delivery.deliver(ended);
    await settle();
    expect(calls).toHaveLength(3);
    expect(scheduled).toEqual([FIRST_REDELIVERY_MS, 2 * FIRST_REDELIVERY_MS]);
    await clock.advance(2 * FIRST_REDELIVERY_MS);
    delivery.deliver(ended);
    expect(calls).toHaveLength(4);
    expect(delivery.state(ended.taskId)).toBe('acked');
    expect(scheduled.at(-1)).toBe(0);
  });

  it('a newer attempt replaces the older one, and a closed delivery hands nothing over', () => {
    const clock = new ManualClock();
    const calls: number[] = [];
    const delivery = new StatusDelivery({ clock, logger: silentLogger, onStatus: (s) => void calls.push(s.attempt), schedule: () => {} });
    delivery.deliver(ended);
    delivery.deliver({ ...ended, attempt: 2 });
    expect(calls).toEqual([1, 2]);
    expect(delivery.status('t1')?.attempt).toBe(2);
    delivery.close();
    delivery.deliver({ ...ended, taskId: 't2' });
    expect(calls).toEqual([1, 2]);
  });
});
