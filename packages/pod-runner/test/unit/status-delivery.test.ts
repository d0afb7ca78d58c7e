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

  it('delivers a terminal status again when onStatus answers with a thenable that rejects, and stores the acknowledgement only when one resolves', async () => {
    const clock = new ManualClock();
    const answers: ReturnType<typeof thenable>[] = [];
    const acknowledged: TaskStatus[] = [];
    const delivery = new StatusDelivery({
      clock,
      logger: silentLogger,
      onStatus: () => {
        const answer = thenable();
        answers.push(answer);
        return answer.value;
      },
      acknowledged: (s) => acknowledged.push(s),
    });
    delivery.deliver(ended);
    await settle();
    expect(answers).toHaveLength(1);
    expect(acknowledged).toEqual([]); // not acknowledged before the thenable settles
    answers[0]!.settle().reject(new Error('the consumer could not store it'));
    await settle();
    expect(acknowledged).toEqual([]);
    expect(delivery.unacknowledged('t1')).toBe(true);
    await clock.advance(FIRST_REDELIVERY_MS);
    expect(answers).toHaveLength(2);
    answers[1]!.settle().resolve(undefined);
    await settle();
    expect(acknowledged).toEqual([ended]);
    expect(delivery.unacknowledged('t1')).toBe(false);
    delivery.close();
  });
});
