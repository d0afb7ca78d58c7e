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

/** A runner of the pair `name` (default `ha`) with its own registry (the election is a Lease in the same namespace). */
async function member(identity: string, name = 'ha'): Promise<{ registry: Registry; runner: PodRunner; reports: TaskStatus[] }> {
  const registry = await createRegistry({ type: 'kubernetes', cluster: 'pods', identity, ...timing, kubernetes: { kubeconfig: requireTestEnv('kubernetes').kubeconfig, namespace: env.namespace } }, { plugins: [registryPlugin as never] });
  closing.push(registry);
  const reports: TaskStatus[] = [];
  const runner = await startRunner(env, { name, registry, identity, capacity: { total: 2 }, onStatus: (s) => reports.push(s) });
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

    // capacity 2, both taken: a follower's submit waits in the leader's queue, on its record
    await a.runner.submit({ taskId: 'ha-blocker', taskType: 'report', ...exits(0, { runMs: 3000 }) });
    expect((await b.runner.submit({ taskId: 'ha-queued', taskType: 'report', ...exits(0, { runMs: 3000 }) })).phase).toBe('queued');
    await observeFor(500);
    expect(await podsOf('ha-queued')).toEqual([]); // a follower creates nothing, the leader has no slot

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

  it("a follower's submit gets its pod within 2 s, no failover", async () => {
    const a = await member('quick-a', 'ha-quick');
    await waitFor(() => a.runner.isLeader, 15_000, 'quick-a to lead');
    const b = await member('quick-b', 'ha-quick');
    expect(b.runner.isLeader).toBe(false);
    const leaderPods = await runnerPods(env.namespace, 'ha-quick');
    expect(leaderPods).toEqual([]);
    const submitted = Date.now();
    expect((await b.runner.submit({ taskId: 'quick', taskType: 'report', ...exits(0, { runMs: 500 }) })).phase).toBe('queued');
    const [pod] = await waitFor(async () => {
      const pods = (await runnerPods(env.namespace, 'ha-quick')).filter((p) => p.metadata!.labels!['rollcall.dev/task-id'] === 'quick');
      return pods.length > 0 ? pods : undefined;
    }, 2000, 'the leader to create the pod of a task a follower was given');
    expect(Date.now() - submitted).toBeLessThan(2000);
    expect(Number(pod!.metadata!.annotations![FENCING_TOKEN_ANNOTATION])).toBeGreaterThan(0);
    expect(a.runner.isLeader).toBe(true);
    expect(b.runner.isLeader).toBe(false);
    // the follower hears the end from the record; only the leader reports it
    expect((await b.runner.result('quick')).phase).toBe('succeeded');
    await waitFor(() => ended(a.reports, 'quick').length === 1 || undefined, 15_000, 'the leader to report the end');
    expect(ended(b.reports, 'quick')).toEqual([]);
    await b.runner.close();
    await a.runner.close();
  });

  it("a follower's cancel of a queued task is durable; no pod; a restart keeps it cancelled", async () => {
    const podsNamed = async (id: string) => (await runnerPods(env.namespace, 'ha-cancel')).filter((p) => p.metadata!.labels!['rollcall.dev/task-id'] === id);
    const a = await member('cancel-a', 'ha-cancel');
    await waitFor(() => a.runner.isLeader, 15_000, 'cancel-a to lead');
    const b = await member('cancel-b', 'ha-cancel');
    // capacity 2, both taken: the next task waits in the queue
    for (const id of ['busy-1', 'busy-2']) await a.runner.submit({ taskId: id, taskType: 'report', ...exits(0, { runMs: 3000 }) });
    expect((await b.runner.submit({ taskId: 'unwanted', taskType: 'report', ...exits(0) })).phase).toBe('queued');
    // the leader writes the end; when its term tells it, its own get shows it (read-your-writes in the writer, not its informer's event)
    let leaderAtEnd: { status: TaskStatus | undefined } | undefined;
    await waitFor(() => a.runner.get('unwanted'), 15_000, "the leader to see the follower's submit");
    void (async () => {
      for await (const s of a.runner.events('unwanted')) if (s.phase === 'cancelled') leaderAtEnd = { status: a.runner.get('unwanted') };
    })();
    const cancelled = await b.runner.cancel('unwanted', { reason: 'not needed after all' });
    expect(cancelled).toMatchObject({ phase: 'cancelled', reason: 'Cancelled', message: 'not needed after all' });
    expect(b.runner.get('unwanted')).toMatchObject({ phase: 'cancelled' }); // what the follower's cancel waited for: its own watch
    // the leader's answer to its write comes on another connection than the follower's watch event: waited for, bounded
    const atEnd = await waitFor(() => leaderAtEnd, 15_000, "the leader's term to tell the end");
    expect(atEnd.status).toMatchObject({ phase: 'cancelled', reason: 'Cancelled', message: 'not needed after all' });
    expect(a.runner.get('unwanted')).toMatchObject({ phase: 'cancelled' });
    await waitFor(() => ended(a.reports, 'unwanted').length === 1 || undefined, 15_000, 'the leader to report the cancel');
    expect(ended(b.reports, 'unwanted')).toEqual([]);
    await b.runner.close();
    await a.runner.close();
    // both gone; a runner started again finds it cancelled, and the freed slots never go to it
    const c = await member('cancel-c', 'ha-cancel');
    await waitFor(() => c.runner.isLeader, 15_000, 'cancel-c to lead');
    expect(c.runner.get('unwanted')).toMatchObject({ phase: 'cancelled', message: 'not needed after all' });
    for (const id of ['busy-1', 'busy-2']) expect((await c.runner.result(id)).phase).toBe('succeeded');
    await observeFor(1000);
    expect(await podsNamed('unwanted')).toEqual([]);
    expect((await c.runner.submit({ taskId: 'unwanted', taskType: 'report', ...exits(0) })).phase).toBe('cancelled');
    expect(await podsNamed('unwanted')).toEqual([]);
    // delivery is at least once (a close between the hand-over and its acknowledgement stored hands it over again): never another end
    for (const r of [...ended(a.reports, 'unwanted'), ...ended(c.reports, 'unwanted')]) expect(r).toMatchObject({ phase: 'cancelled', attempt: 1, message: 'not needed after all' });
  });
});
