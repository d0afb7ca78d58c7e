import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection, waitFor } from '@rollcall/conformance';
import type { PodRunner, TaskStatus } from '../src/index.js';
import { admin, exits, podTemplate, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

/** The task ledger on the real API server: its format, its bound, acknowledgement, and a retry's backoff across a restart. */
let env: { namespace: string; kubeconfig: string };
const open: PodRunner[] = [];

beforeAll(async () => {
  env = await runnerNamespace('pod-ledger');
});

afterAll(async () => {
  for (const runner of open) await runner.close();
});

const ledger = (runner: string) => admin.core.readNamespacedConfigMap({ namespace: env.namespace, name: `pod-runner-${runner}-ledger` });
const entry = async (runner: string, taskId: string) => {
  const text = (await ledger(runner)).data?.[`task.${taskId}`];
  return text === undefined ? undefined : (JSON.parse(text) as { state: string; status?: TaskStatus; task?: { attempt: number }; retryAt?: number });
};

describe('the task ledger', () => {
  it('refuses a ledger of a newer format with SCHEMA_MISMATCH and leaves it as it was', async () => {
    await admin.core.createNamespacedConfigMap({ namespace: env.namespace, body: { metadata: { name: 'pod-runner-newer-ledger' }, data: { format: '2', 'task.x': '{"v":2}' } } });
    const before = (await ledger('newer')).metadata!.resourceVersion;
    expect(await rejection(startRunner(env, { name: 'newer' }))).toMatchObject({ code: 'SCHEMA_MISMATCH' });
    expect((await ledger('newer')).metadata!.resourceVersion).toBe(before);
    expect(await runnerPods(env.namespace, 'newer')).toEqual([]);
  });

  it('refuses a submit the ledger has no room for with PAYLOAD_TOO_LARGE: no entry, no pod', async () => {
    // 100 terminal statuses of 8000 bytes each, never acknowledged: nothing the runner may remove
    const big = (i: number): TaskStatus => ({ taskId: `old-${i}`, taskType: 'report', tags: {}, attempt: 1, phase: 'failed', podName: `full-old-${i}-1`, template: 'default', submittedAt: '2026-12-05T10:00:00.000Z', message: 'x'.repeat(8000) });
    const data = Object.fromEntries([['format', '1'], ...Array.from({ length: 100 }, (_, i) => [`task.old-${i}`, JSON.stringify({ v: 1, state: 'finished', status: big(i) })])]);
    await admin.core.createNamespacedConfigMap({ namespace: env.namespace, body: { metadata: { name: 'pod-runner-full-ledger' }, data } });
    const runner = await startRunner(env, { name: 'full', onStatus: () => new Promise(() => undefined) });
    open.push(runner);
    expect(await rejection(runner.submit({ taskId: 'one-too-many', taskType: 'report', ...exits(0) }))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(runner.get('one-too-many')).toBeUndefined();
    expect(await entry('full', 'one-too-many')).toBeUndefined();
    expect(await runnerPods(env.namespace, 'full')).toEqual([]);
  });

  it('delivers a terminal status until onStatus resolves, then keeps only its tombstone', async () => {
    let calls = 0;
    const runner = await startRunner(env, {
      name: 'acks',
      onStatus: (s) => {
        if (s.phase !== 'succeeded') return undefined;
        calls += 1;
        return calls < 3 ? Promise.reject(new Error(`consumer down (${calls})`)) : Promise.resolve();
      },
    });
    open.push(runner);
    await runner.submit({ taskId: 'acked', taskType: 'report', ...exits(0) });
    await runner.result('acked');
    expect(await entry('acks', 'acked')).toMatchObject({ state: 'finished', status: { phase: 'succeeded' } });
    // again after 1 s, then 2 s
    await waitFor(async () => (await entry('acks', 'acked'))?.state === 'done', 15_000, 'the tombstone after the third delivery');
    expect(calls).toBe(3);
    expect(await entry('acks', 'acked')).toEqual({ v: 1, state: 'done', status: expect.objectContaining({ taskId: 'acked', attempt: 1, phase: 'succeeded' }), specHash: expect.any(String), ackedAt: expect.any(Number) });
  });

  it('keeps a retry in its backoff across a restart: attempt 2 is created when the backoff ends, attempt 1 never again', async () => {
    const templates = [{ name: 'flaky', retry: { maxAttempts: 2, backoffMs: 4000, retryOn: { exitCodes: { operator: 'In' as const, values: [75] } } }, template: podTemplate() }];
    const first = await startRunner(env, { name: 'backoff', templates });
    await first.submit({ taskId: 'retried', taskType: 'report', ...exits(75) });
    await waitFor(() => first.get('retried')?.attempt === 2, 15_000, 'attempt 1 to end and the retry to wait');
    await waitFor(async () => (await runnerPods(env.namespace, 'backoff')).length === 0, 15_000, 'attempt 1\'s pod to go');
    await first.close();
    const stored = await entry('backoff', 'retried');
    expect(stored).toMatchObject({ state: 'queued', task: { attempt: 2 } });

    const second = await startRunner(env, { name: 'backoff', templates });
    open.push(second);
    expect(second.get('retried')).toMatchObject({ phase: 'queued', attempt: 2, reason: 'RetryBackoff', previousAttempts: [{ attempt: 1, exitCode: 75 }] });
    expect(await runnerPods(env.namespace, 'backoff')).toEqual([]);
    const final = await second.result('retried');
    expect(final).toMatchObject({ phase: 'failed', attempt: 2, exitCode: 75, previousAttempts: [{ attempt: 1 }] });
    // not before the backoff stored with the first runner ended
    expect(Date.parse(final.finishedAt!)).toBeGreaterThanOrEqual(Math.floor(stored!.retryAt! / 1000) * 1000);
  });
});
