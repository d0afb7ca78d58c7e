import { describe, expect, it } from 'vitest';
import { silentLogger } from '@rollcall/core';
import { ManualClock } from '@rollcall/core/testing';
import type { RunnerActivity } from '@rollcall/pod-runner-activity';
import { RunnerActivityReporter } from '../../src/runner-activity.js';
import type { TaskStatus } from '../../src/task.js';

const status = (taskId: string, change: Partial<TaskStatus>): TaskStatus => ({ taskId, taskType: 'report', tags: {}, attempt: 1, phase: 'queued', podName: `rollcall-${taskId}-1`, template: 'default', submittedAt: '2026-01-01T00:00:00.000Z', ...change });

function reporter() {
  const clock = new ManualClock();
  const r = new RunnerActivityReporter(clock, silentLogger);
  const seen: RunnerActivity[] = [];
  r.observe((a) => seen.push(a));
  return { clock, r, seen };
}

describe('RunnerActivityReporter', () => {
  it('reports a phase change with the phase before, once per phase, and not a change of cause or message within it', () => {
    const { r, seen } = reporter();
    r.status(status('t', { phase: 'queued' }));
    r.status(status('t', { phase: 'queued', message: 'requeued: exceeded quota' }));
    r.status(status('t', { phase: 'pending', pendingCause: 'scheduling' }));
    r.status(status('t', { phase: 'pending', pendingCause: 'image-pull' }));
    r.status(status('t', { phase: 'succeeded', reason: 'Completed' }));
    expect(seen.filter((a) => a.type === 'status').map((a) => a.type === 'status' && [a.previousPhase, a.phase, a.reason])).toEqual([
      [undefined, 'queued', undefined],
      ['queued', 'pending', undefined],
      ['pending', 'succeeded', 'Completed'],
    ]);
  });

  it('times each pending cause on its clock, from when it began to when the pod left it', async () => {
    const { clock, r, seen } = reporter();
    r.status(status('t', { phase: 'pending', pendingCause: 'scheduling' }));
    await clock.advance(1500);
    r.status(status('t', { phase: 'pending', pendingCause: 'image-pull' }));
    await clock.advance(4000);
    r.status(status('t', { phase: 'pending', pendingCause: 'image-pull', message: 'Back-off pulling image' }));
    await clock.advance(500);
    r.status(status('t', { phase: 'running' }));
    expect(seen.filter((a) => a.type === 'pending')).toEqual([
      { type: 'pending', taskType: 'report', cause: 'scheduling', seconds: 1.5 },
      { type: 'pending', taskType: 'report', cause: 'image-pull', seconds: 4.5 },
    ]);
  });

  it('tells a listener added later every task that has not ended, and marks what another runner reported as quiet', () => {
    const { r } = reporter();
    r.status(status('open', { phase: 'running' }));
    r.status(status('done', { phase: 'running' }));
    r.status(status('done', { phase: 'failed', reason: 'Error' }));
    r.status(status('elsewhere', { phase: 'succeeded', reason: 'Completed' }), true);
    const late: RunnerActivity[] = [];
    r.observe((a) => late.push(a));
    expect(late).toEqual([{ type: 'status', taskId: 'open', taskType: 'report', phase: 'running', previousPhase: undefined, reason: undefined }]);
    r.status(status('known-from-pod', { phase: 'succeeded' }), true);
    expect(late.at(-1)).toMatchObject({ taskId: 'known-from-pod', phase: 'succeeded', quiet: true });
  });

  it('keeps telling the other listeners when one throws, and after close tells a new one only that it closed', () => {
    const clock = new ManualClock();
    const r = new RunnerActivityReporter(clock, silentLogger);
    const seen: RunnerActivity[] = [];
    r.observe(() => {
      throw new Error('a listener bug');
    });
    r.observe((a) => seen.push(a));
    r.emit({ type: 'requeue', taskType: 'report', reason: 'QuotaExceeded' });
    r.close();
    expect(seen).toEqual([{ type: 'requeue', taskType: 'report', reason: 'QuotaExceeded' }, { type: 'closed' }]);
    const after: RunnerActivity[] = [];
    r.observe((a) => after.push(a));
    r.emit({ type: 'watchEnded', code: 'UNAVAILABLE' });
    expect(after).toEqual([{ type: 'closed' }]);
  });
});
