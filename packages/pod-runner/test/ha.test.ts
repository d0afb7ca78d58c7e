import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeFor, waitFor } from '@rollcall/conformance';
import { createRegistry, type Registry } from '@rollcall/core';
import { registryPlugin } from '@rollcall/kubernetes';
import { requireTestEnv } from '@rollcall/tools/testenv';
import { FENCING_TOKEN_ANNOTATION, type PodRunner, type TaskStatus } from '../src/index.js';
import { exits, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

let env: { namespace: string; kubeconfig: string };
const closing: { close(): Promise<void> }[] = [];
const timing = { election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 400 } };

beforeAll(async () => {
  env = await runnerNamespace('pod-ha');
});

afterAll(async () => {
  for (const c of closing.reverse()) await c.close().catch(() => undefined);
});

/** A runner of the pair `ha` with its own registry (the election is a Lease in the same namespace). */
async function member(identity: string): Promise<{ registry: Registry; runner: PodRunner; reports: TaskStatus[] }> {
  const registry = await createRegistry({ type: 'kubernetes', cluster: 'pods', identity, ...timing, kubernetes: { kubeconfig: requireTestEnv('kubernetes').kubeconfig, namespace: env.namespace } }, { plugins: [registryPlugin as never] });
  closing.push(registry);
  const reports: TaskStatus[] = [];
  const runner = await startRunner(env, { name: 'ha', registry, identity, onStatus: (s) => reports.push(s) });
  closing.push(runner);
  return { registry, runner, reports };
}

const ended = (reports: TaskStatus[], id: string) => reports.filter((r) => r.taskId === id && ['succeeded', 'failed', 'timed-out', 'cancelled', 'lost'].includes(r.phase));
const podsOf = async (id: string) => (await runnerPods(env.namespace, 'ha')).filter((p) => p.metadata!.labels!['rollcall.dev/task-id'] === id);

describe('two runners with a registry', () => {
  it('only the leader creates pods, stamped with its fencing token; the other takes over, re-attaches, reports once and creates what was queued', async () => {
    const a = await member('runner-a');
    await waitFor(() => a.runner.isLeader, 15_000, 'runner-a to lead');
    const b = await member('runner-b');
    expect(b.runner.isLeader).toBe(false);

    // both are given the same task: the leader runs it, the follower only learns how it ended
    await Promise.all([a.runner.submit({ taskId: 'ha-done', taskType: 'report', ...exits(0) }), b.runner.submit({ taskId: 'ha-done', taskType: 'report', ...exits(0) })]);
    expect((await a.runner.result('ha-done')).phase).toBe('succeeded');
    expect((await b.runner.result('ha-done')).phase).toBe('succeeded');
    expect(ended(b.reports, 'ha-done')).toEqual([]);

    await a.runner.submit({ taskId: 'ha-running', taskType: 'report', ...exits(0, { runMs: 3000, message: '{"by":"pod"}' }) });
    const [pod] = await podsOf('ha-running');
    const firstToken = Number(pod!.metadata!.annotations![FENCING_TOKEN_ANNOTATION]);
    expect(firstToken).toBeGreaterThan(0);
    await waitFor(() => a.runner.get('ha-running')?.phase === 'running', 15_000, 'the task to run');

    expect((await b.runner.submit({ taskId: 'ha-queued', taskType: 'report', ...exits(0, { runMs: 3000 }) })).phase).toBe('queued');
    await observeFor(500);
    expect(await podsOf('ha-queued')).toEqual([]); // a follower creates nothing

    await a.runner.close(); // the leader goes away mid-run: it resigns, the other is elected
    await waitFor(() => b.runner.isLeader, 15_000, 'runner-b to take over');
    const queuedPods = await waitFor(async () => {
      const pods = await podsOf('ha-queued');
      return pods.length > 0 ? pods : undefined;
    }, 15_000, () => `the new leader to create the queued task's pod (${JSON.stringify(b.runner.get('ha-queued'))})`);
    expect(Number(queuedPods[0]!.metadata!.annotations![FENCING_TOKEN_ANNOTATION])).toBeGreaterThan(firstToken);
    expect(await b.runner.result('ha-running')).toMatchObject({ phase: 'succeeded', result: { by: 'pod' } });
    expect(ended(b.reports, 'ha-running')).toHaveLength(1);
    expect(ended(a.reports, 'ha-running')).toEqual([]);

    expect((await b.runner.result('ha-queued')).phase).toBe('succeeded');
    expect(ended(b.reports, 'ha-queued')).toHaveLength(1);
    await waitFor(async () => (await runnerPods(env.namespace, 'ha')).length === 0, 15_000, 'every pod to be deleted');
    expect(ended(b.reports, 'ha-done')).toEqual([]); // not run again by the new leader
  });
});
