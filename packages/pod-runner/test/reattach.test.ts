import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeFor, waitFor } from '@rollcall/conformance';
import type { PodRunner, TaskStatus } from '../src/index.js';
import { admin, exits, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

let env: { namespace: string; kubeconfig: string };
const open: PodRunner[] = [];

beforeAll(async () => {
  env = await runnerNamespace('pod-reattach');
});

afterAll(async () => {
  await Promise.all(open.map((r) => r.close()));
});

/** A runner whose every reported status is kept, from the re-attach at its start on. */
async function reporting(name: string): Promise<{ runner: PodRunner; reports: TaskStatus[] }> {
  const reports: TaskStatus[] = [];
  const runner = await startRunner(env, { name, onStatus: (s) => reports.push(s) });
  open.push(runner);
  return { runner, reports };
}

const terminal = (reports: TaskStatus[], taskId: string) => reports.filter((r) => r.taskId === taskId && ['succeeded', 'failed', 'timed-out', 'cancelled', 'lost'].includes(r.phase));

describe('a runner that stops and another that starts', () => {
  it('reports a task that finished while no runner was up exactly once, from the pod the finalizer kept, and makes no second pod', async () => {
    const first = await reporting('gap');
    const { podName } = await first.runner.submit({ taskId: 'finished-in-gap', taskType: 'report', ...exits(0, { runMs: 1500, message: '{"ok":true}' }) });
    await waitFor(() => first.runner.get('finished-in-gap')?.phase === 'running', 15_000, 'the task to run');
    await first.runner.close();
    await waitFor(async () => (await admin.core.readNamespacedPod({ namespace: env.namespace, name: podName })).status?.phase === 'Succeeded', 15_000, 'the pod to finish with no runner up');

    const second = await reporting('gap');
    expect(terminal(second.reports, 'finished-in-gap')).toEqual([expect.objectContaining({ phase: 'succeeded', exitCode: 0, result: { ok: true } })]);
    await waitFor(async () => (await runnerPods(env.namespace, 'gap')).length === 0, 15_000, 'the recorded pod to be deleted');
    expect((await second.runner.submit({ taskId: 'finished-in-gap', taskType: 'report', ...exits(0, { runMs: 1500, message: '{"ok":true}' }) })).phase).toBe('succeeded');
    await observeFor(500);
    expect(await runnerPods(env.namespace, 'gap')).toEqual([]);
    expect(terminal(second.reports, 'finished-in-gap')).toHaveLength(1);
    await second.runner.close();

    // the acknowledged end is kept on the task's record (`done`): answered, never reported again
    const third = await reporting('gap');
    expect(third.runner.get('finished-in-gap')).toMatchObject({ phase: 'succeeded', exitCode: 0, result: { ok: true } });
    expect(terminal(third.reports, 'finished-in-gap')).toEqual([]);
  });

  it('follows a task still running at the restart to its end, reported once', async () => {
    const first = await reporting('follow');
    await first.runner.submit({ taskId: 'running-across', taskType: 'report', ...exits(7, { runMs: 2500, message: 'bad input row 3' }) });
    await waitFor(() => first.runner.get('running-across')?.phase === 'running', 15_000, 'the task to run');
    await first.runner.close();
    const second = await reporting('follow');
    expect(second.runner.get('running-across')?.phase).toBe('running');
    expect(await second.runner.result('running-across')).toMatchObject({ phase: 'failed', exitCode: 7, terminationMessage: 'bad input row 3' });
    expect(terminal(first.reports, 'running-across')).toEqual([]);
    expect(terminal(second.reports, 'running-across')).toHaveLength(1);
    await waitFor(async () => (await runnerPods(env.namespace, 'follow')).length === 0, 15_000, 'the pod to be deleted');
  });

  it('ends an evicted task as lost', async () => {
    const { runner } = await reporting('evict');
    const { podName } = await runner.submit({ taskId: 'evicted', taskType: 'report' });
    await waitFor(() => runner.get('evicted')?.phase === 'running', 15_000, 'the task to run');
    await admin.core.createNamespacedPodEviction({ name: podName, namespace: env.namespace, body: { metadata: { name: podName, namespace: env.namespace } } });
    // the Eviction API's DisruptionTarget condition names it: Evicted, not a plain delete
    expect(await runner.result('evicted')).toMatchObject({ phase: 'lost', reason: 'Evicted' });
    await waitFor(async () => (await runnerPods(env.namespace, 'evict')).length === 0, 15_000, 'the evicted pod to go');
  });
});
