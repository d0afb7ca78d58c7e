import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection, waitFor } from '@rollcall/conformance';
import type { PodRunner, TaskStatus } from '../src/index.js';
import { admin, enforcedPodQuota, exits, podTemplate, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

/** Retries by a template's policy and the queue deadline, on kwok. */
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;
const reports: TaskStatus[] = [];

beforeAll(async () => {
  env = await runnerNamespace('pod-retries');
  runner = await startRunner(env, {
    onStatus: (s) => reports.push(s),
    templates: [
      { name: 'flaky', taskTypes: ['flaky'], retry: { maxAttempts: 2, backoffMs: 100, retryOn: { reasons: ['Deleted', 'Evicted', 'NodeLost'], exitCodes: { operator: 'In', values: [3] } } }, template: podTemplate() },
      { name: 'default', template: podTemplate() },
    ],
  });
});

afterAll(async () => {
  await runner?.close();
});

const podExists = (name: string) => admin.core.readNamespacedPod({ name, namespace: env.namespace }).then(() => true, () => false);

describe('a retry policy', () => {
  it('runs a pod deleted out of band again as the next attempt, which succeeds', async () => {
    const first = await runner.submit({ taskId: 'deleted-once', taskType: 'flaky', ...exits(0, { runMs: 3000 }) });
    for await (const status of runner.events('deleted-once')) if (status.phase === 'running') break;
    await admin.core.deleteNamespacedPod({ name: first.podName, namespace: env.namespace });
    const final = await runner.result('deleted-once');
    expect(final).toMatchObject({ phase: 'succeeded', attempt: 2, podName: 'rollcall-deleted-once-2', previousAttempts: [{ attempt: 1, podName: first.podName, phase: 'lost', reason: 'Deleted' }] });
    // the retry waited its backoff as queued, its attempt number in the status
    expect(reports.filter((r) => r.taskId === 'deleted-once' && r.phase === 'queued').map((r) => [r.attempt, r.reason])).toEqual([[1, undefined], [2, 'RetryBackoff'], [2, undefined]]);
    await waitFor(async () => !(await podExists(first.podName)) && !(await podExists(final.podName)), 15_000, 'both pods deleted');
  });

  it('stops after maxAttempts, with every attempt\'s outcome', async () => {
    await runner.submit({ taskId: 'fails-twice', taskType: 'flaky', ...exits(3, { runMs: 200 }) });
    expect(await runner.result('fails-twice')).toMatchObject({ phase: 'failed', exitCode: 3, attempt: 2, previousAttempts: [{ attempt: 1, phase: 'failed', exitCode: 3 }] });
  });

  it('does not retry an exit code it does not name, nor a template without a policy', async () => {
    await runner.submit({ taskId: 'fails-once', taskType: 'flaky', ...exits(4, { runMs: 200 }) });
    await runner.submit({ taskId: 'no-policy', taskType: 'plain', ...exits(3, { runMs: 200 }) });
    expect(await runner.result('fails-once')).toMatchObject({ phase: 'failed', exitCode: 4, attempt: 1 });
    expect(await runner.result('no-policy')).toMatchObject({ phase: 'failed', exitCode: 3, attempt: 1 });
    expect((await runner.result('no-policy')).previousAttempts).toBeUndefined();
  });

  it('rejects a bad policy with INVALID_CONFIG before anything is created', async () => {
    const bad = await rejection(startRunner(env, { name: 'bad-policy', templates: [{ name: 'x', template: podTemplate(), retry: { maxAttempts: 0, retryOn: { reasons: ['Evicted'] } } }] }));
    expect(bad).toMatchObject({ code: 'INVALID_CONFIG', key: 'templates[0].retry.maxAttempts' });
    const badTimeout = await rejection(startRunner(env, { name: 'bad-timeout', timeouts: { queue: -1 } }));
    expect(badTimeout).toMatchObject({ code: 'INVALID_CONFIG', key: 'timeouts.queue' });
    expect(await runnerPods(env.namespace, 'bad-policy')).toEqual([]);
  });
});

describe('the queue deadline', () => {
  it('fails a task the quota never admits, with the last refusal, and creates no pod', async () => {
    const quotaEnv = await runnerNamespace('pod-queue-deadline');
    await enforcedPodQuota(quotaEnv.namespace, 'no-pods', 0);
    const starved = await startRunner(quotaEnv, { requeueDelayMs: 200 });
    try {
      expect(await starved.submit({ taskId: 'never-admitted', taskType: 'report', timeouts: { queue: 1500 } })).toMatchObject({ phase: 'queued', message: expect.stringMatching(/^requeued: /) });
      const status = await starved.result('never-admitted');
      expect(status).toMatchObject({ phase: 'timed-out', reason: 'QueueTimeout', message: expect.stringMatching(/^waited in the queue 1500 ms and was never admitted .*exceeded quota/) });
      expect(await runnerPods(quotaEnv.namespace)).toEqual([]);
    } finally {
      await starved.close();
    }
  });

  it('fails a task that waits on capacity past its deadline, and not one that got a pod in time', async () => {
    const narrow = await startRunner(env, { name: 'narrow', capacity: { total: 1 } });
    try {
      await narrow.submit({ taskId: 'holder', taskType: 'report', timeouts: { queue: 1000 }, ...exits(0, { runMs: 4000 }) });
      await narrow.submit({ taskId: 'waiter', taskType: 'report', timeouts: { queue: 1000 }, ...exits(0, { runMs: 100 }) });
      expect(await narrow.result('waiter')).toMatchObject({ phase: 'timed-out', reason: 'QueueTimeout' });
      expect(await narrow.result('holder')).toMatchObject({ phase: 'succeeded' });
      expect(await podExists('narrow-waiter-1')).toBe(false);
    } finally {
      await narrow.close();
    }
  });
});
