import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection, waitFor } from '@rollcall/conformance';
import type { PodRunner, TaskStatus } from '../src/index.js';
import { recordName } from '../src/task-record.js';
import { admin, exits, podTemplate, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

/** The task records on the real API server: a newer ledger refused, the submit bound, acknowledgement, and a retry's backoff across a restart. */
let env: { namespace: string; kubeconfig: string };
const open: PodRunner[] = [];

beforeAll(async () => {
  env = await runnerNamespace('pod-records');
});

afterAll(async () => {
  for (const runner of open) await runner.close();
});

const ledger = (runner: string) => admin.core.readNamespacedConfigMap({ namespace: env.namespace, name: `pod-runner-${runner}-ledger` });
/** The task's record body as stored, or undefined when it has none. */
const record = async (runner: string, taskId: string) => {
  const object = await admin.core.readNamespacedConfigMap({ namespace: env.namespace, name: recordName(runner, taskId) }).catch(() => undefined);
  const text = object?.data?.record;
  return text === undefined ? undefined : (JSON.parse(text) as { state: string; status?: TaskStatus; task?: { attempt: number }; retryAt?: number; ackedAt?: number });
};

describe('the task records', () => {
  it('refuses a v1 ledger of a newer format with SCHEMA_MISMATCH and leaves it as it was', async () => {
    await admin.core.createNamespacedConfigMap({ namespace: env.namespace, body: { metadata: { name: 'pod-runner-newer-ledger' }, data: { format: '3', 'task.x': '{"v":3}' } } });
    const before = (await ledger('newer')).metadata!.resourceVersion;
    expect(await rejection(startRunner(env, { name: 'newer' }))).toMatchObject({ code: 'SCHEMA_MISMATCH' });
    expect((await ledger('newer')).metadata!.resourceVersion).toBe(before);
    expect(await runnerPods(env.namespace, 'newer')).toEqual([]);
  });

  it('refuses a submit whose record is over 256 KiB with PAYLOAD_TOO_LARGE: no record, no pod', async () => {
    const runner = await startRunner(env, { name: 'big' });
    open.push(runner);
    const tags = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`t${i}`, 'x'.repeat(7000)]));
    expect(await rejection(runner.submit({ taskId: 'too-big', taskType: 'report', tags, ...exits(0) }))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(runner.get('too-big')).toBeUndefined();
    expect(await record('big', 'too-big')).toBeUndefined();
    expect(await runnerPods(env.namespace, 'big')).toEqual([]);
  });

  it('delivers a terminal status until onStatus resolves, then keeps the record done with the whole status', async () => {
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
    await runner.submit({ taskId: 'acked', taskType: 'report', ...exits(0, { message: '{"rows":2}' }) });
    await runner.result('acked');
    expect(await record('acks', 'acked')).toMatchObject({ state: 'finished', status: { phase: 'succeeded' } });
    // again after 1 s, then 2 s
    await waitFor(async () => (await record('acks', 'acked'))?.state === 'done', 15_000, 'the record done after the third delivery');
    expect(calls).toBe(3);
    expect(await record('acks', 'acked')).toMatchObject({ state: 'done', status: { taskId: 'acked', attempt: 1, phase: 'succeeded', result: { rows: 2 } }, ackedAt: expect.any(Number) });
  });

  it('keeps a retry in its backoff across a restart: attempt 2 is created when the backoff ends, attempt 1 never again', async () => {
    const templates = [{ name: 'flaky', retry: { maxAttempts: 2, backoffMs: 4000, retryOn: { exitCodes: { operator: 'In' as const, values: [75] } } }, template: podTemplate() }];
    const first = await startRunner(env, { name: 'backoff', templates });
    await first.submit({ taskId: 'retried', taskType: 'report', ...exits(75) });
    await waitFor(() => first.get('retried')?.attempt === 2, 15_000, 'attempt 1 to end and the retry to wait');
    await waitFor(async () => (await runnerPods(env.namespace, 'backoff')).length === 0, 15_000, 'attempt 1\'s pod to go');
    await first.close();
    const stored = await record('backoff', 'retried');
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
