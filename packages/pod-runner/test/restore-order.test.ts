import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import type { PodRunner, TaskStatus } from '../src/index.js';
import { exits, runnerNamespace, startRunner } from './runner-env.js';

/** The queue a runner restores from the ledger, on kwok: in submit order. */
let env: { namespace: string; kubeconfig: string };
const runners: PodRunner[] = [];

beforeAll(async () => {
  env = await runnerNamespace('pod-restore-order');
});

afterAll(async () => {
  for (const runner of runners) await runner.close();
});

describe('a runner restoring its queue from the ledger', () => {
  it('creates the queued tasks in the order they were submitted, not in the order of their keys', async () => {
    const first = await startRunner(env, { name: 'order', capacity: { total: 1 } });
    runners.push(first);
    // the blocker holds the one slot; the others wait in the queue, submitted in reverse alphabetical order
    await first.submit({ taskId: 'blocker', taskType: 'report', ...exits(0, { runMs: 3000 }) });
    const queued = ['task-z', 'task-y', 'task-x', 'task-w'];
    for (const taskId of queued) expect(await first.submit({ taskId, taskType: 'report', ...exits(0, { runMs: 100 }) })).toMatchObject({ phase: 'queued' });
    await first.close();

    const created: string[] = [];
    const reports: TaskStatus[] = [];
    const second = await startRunner(env, {
      name: 'order',
      capacity: { total: 1 },
      onStatus: (s) => {
        reports.push(s);
        if (s.phase === 'pending' && s.taskId !== 'blocker' && !created.includes(s.taskId)) created.push(s.taskId);
      },
    });
    runners.push(second);
    await waitFor(() => queued.every((id) => reports.some((r) => r.taskId === id && r.phase === 'succeeded')), 60_000, () => `every queued task to succeed (created so far: ${created.join(', ')})`);
    expect(created).toEqual(queued);
  });
});
