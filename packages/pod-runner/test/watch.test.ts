import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactServer, restartApiServerAndControllers } from '@rollcall/tools/testenv';
import type { PodRunner, TaskStatus } from '../src/index.js';
import { exits, runnerNamespace, startRunner } from './runner-env.js';

let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;
const reports: TaskStatus[] = [];

beforeAll(async () => {
  env = await runnerNamespace('pod-watch');
  runner = await startRunner(env, { onStatus: (s) => reports.push(s) });
});

afterAll(async () => {
  await runner?.close();
});

const ends = (taskId: string) => reports.filter((r) => r.taskId === taskId && ['succeeded', 'failed', 'timed-out', 'cancelled', 'lost'].includes(r.phase));

describe('the one watch', () => {
  it('misses no terminal state across an API server restart', async () => {
    const ids = ['restart-1', 'restart-2', 'restart-3'];
    await Promise.all(ids.map((taskId, i) => runner.submit({ taskId, taskType: 'report', ...exits(i, { runMs: 2000 + i * 500 }) })));
    // The scheduler and controller manager with it, so that the file's later pods are scheduled at once.
    await restartApiServerAndControllers();
    const results = await Promise.all(ids.map((id) => runner.result(id)));
    expect(results.map((r) => [r.phase, r.exitCode])).toEqual([['succeeded', 0], ['failed', 1], ['failed', 2]]);
    for (const id of ids) expect(ends(id)).toHaveLength(1);
  });

  it('relists after 410 Gone and reports exactly what changed meanwhile, once', async () => {
    const lists = runner.podLists;
    const ids = ['gone-1', 'gone-2'];
    await Promise.all(ids.map((taskId) => runner.submit({ taskId, taskType: 'report', ...exits(0, { runMs: 1500 }) })));
    await compactServer('kubernetes');
    const results = await Promise.all(ids.map((id) => runner.result(id)));
    expect(results.every((r) => r.phase === 'succeeded')).toBe(true);
    expect(runner.podLists).toBeGreaterThan(lists);
    for (const id of ids) expect(ends(id)).toHaveLength(1);
  });
});
