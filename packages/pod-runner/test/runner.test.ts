import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeFor, rejection, waitFor } from '@rollcall/conformance';
import { ErrorCode } from '@rollcall/core';
import { type PodRunner, type TaskStatus } from '../src/index.js';
import { admin, exits, podTemplate, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;

beforeAll(async () => {
  env = await runnerNamespace('pod-runner');
  runner = await startRunner(env, {
    onStatus: (s) => process.env.POD_DEBUG && console.log(Date.now(), s.taskId, s.phase, s.pendingCause ?? '', s.reason ?? ''),
    templates: [
      { name: 'trainer', taskTypes: ['train'], template: podTemplate({ nodeSelector: { type: 'kwok' } }, { pool: 'train' }) },
      { name: 'batch', tags: { tier: 'batch' }, template: podTemplate({}, { pool: 'batch' }) },
      { name: 'default', template: podTemplate({}, { pool: 'default' }) },
    ],
  });
});

afterAll(async () => {
  await runner?.close();
});

describe('a pod per task', () => {
  it('builds each pod from the first rule that matches, and one pod per task id however often it is submitted', async () => {
    const [train, batch, other] = await Promise.all([
      runner.submit({ taskId: 'select-train', taskType: 'train', tags: { tier: 'batch' }, ...exits(0, { runMs: 1500 }) }),
      runner.submit({ taskId: 'select-batch', taskType: 'report', tags: { tier: 'batch' }, ...exits(0, { runMs: 1500 }) }),
      runner.submit({ taskId: 'select-other', taskType: 'report', ...exits(0, { runMs: 1500 }) }),
    ]);
    expect([train!.template, batch!.template, other!.template]).toEqual(['trainer', 'batch', 'default']);
    const again = await runner.submit({ taskId: 'select-train', taskType: 'train', tags: { tier: 'batch' }, ...exits(0, { runMs: 1500 }) });
    expect(again.podName).toBe(train!.podName);
    const pods = await runnerPods(env.namespace);
    const pools = Object.fromEntries(pods.map((p) => [p.metadata!.labels!['rollcall.dev/task-id'], p.metadata!.labels!.pool]));
    expect(pools).toEqual({ 'select-train': 'train', 'select-batch': 'batch', 'select-other': 'default' });
    expect(pods.find((p) => p.metadata!.name === train!.podName)?.spec?.nodeSelector).toEqual({ type: 'kwok' });
    for (const id of ['select-train', 'select-batch', 'select-other']) expect((await runner.result(id)).phase).toBe('succeeded');
  });

  it('reports the exit code and the termination message parsed as JSON, then leaves no pod behind', async () => {
    await runner.submit({ taskId: 'result-json', taskType: 'report', ...exits(0, { message: '{"rows":12,"file":"s3://bucket/out"}' }) });
    await runner.submit({ taskId: 'result-fail', taskType: 'report', ...exits(3, { message: 'disk full' }) });
    const ok = await runner.result('result-json');
    expect(ok).toMatchObject({ phase: 'succeeded', exitCode: 0, reason: 'Completed', result: { rows: 12, file: 's3://bucket/out' } });
    expect(ok.finishedAt).toBeDefined();
    const failed = await runner.result('result-fail');
    expect(failed).toMatchObject({ phase: 'failed', exitCode: 3, terminationMessage: 'disk full' });
    expect(failed.result).toBeUndefined();
    await waitFor(async () => (await runnerPods(env.namespace)).every((p) => !['result-json', 'result-fail'].includes(p.metadata!.labels!['rollcall.dev/task-id']!)), 15_000, 'the finished pods to be deleted');
  });

  it('streams every status change of a task through events(id), ending with the terminal one', async () => {
    await runner.submit({ taskId: 'events-one', taskType: 'report', ...exits(0, { runMs: 500 }) });
    const phases: string[] = [];
    for await (const status of runner.events('events-one')) phases.push(status.phase);
    expect(phases.at(-1)).toBe('succeeded');
    expect(phases).toContain('running');
  });
});

describe('cancel and loss', () => {
  it('cancels a running task: cancelled at once and for good (past the moment it would have completed), its pod deleted, a resubmit creates nothing', async () => {
    await runner.submit({ taskId: 'cancel-running', taskType: 'report', ...exits(0, { runMs: 800 }) });
    await waitFor(() => runner.get('cancel-running')?.phase === 'running', 15_000, 'the task to run');
    const cancelled = await runner.cancel('cancel-running', { reason: 'operator asked', graceSeconds: 0 });
    expect(cancelled).toMatchObject({ phase: 'cancelled', message: 'operator asked' });
    await waitFor(async () => (await runnerPods(env.namespace)).every((p) => p.metadata!.labels!['rollcall.dev/task-id'] !== 'cancel-running'), 15_000, 'the cancelled pod to go');
    expect((await runner.submit({ taskId: 'cancel-running', taskType: 'report', ...exits(0, { runMs: 800 }) })).phase).toBe('cancelled');
    await observeFor(1000);
    expect(runner.get('cancel-running')?.phase).toBe('cancelled');
    expect((await runnerPods(env.namespace)).some((p) => p.metadata!.labels!['rollcall.dev/task-id'] === 'cancel-running')).toBe(false);
  });

  it('cancels a pending task: its pod goes and it stays cancelled', async () => {
    const unschedulable = await startRunner(env, { name: 'pending', templates: [{ name: 'nowhere', template: podTemplate({ nodeSelector: { pool: 'none' } }) }] });
    try {
      await unschedulable.submit({ taskId: 'cancel-pending', taskType: 'report', ...exits(0) });
      await waitFor(() => unschedulable.get('cancel-pending')?.pendingCause === 'unschedulable', 15_000, 'the scheduler to call it unschedulable');
      expect((await unschedulable.cancel('cancel-pending')).phase).toBe('cancelled');
      await waitFor(async () => (await runnerPods(env.namespace, 'pending')).length === 0, 15_000, 'the pending pod to go');
      expect((await unschedulable.result('cancel-pending')).phase).toBe('cancelled');
    } finally {
      await unschedulable.close();
    }
  });

  it('ends a task whose pod is deleted behind its back as lost, never succeeded', async () => {
    const status = await runner.submit({ taskId: 'deleted-oob', taskType: 'report' });
    await waitFor(() => runner.get('deleted-oob')?.phase === 'running', 15_000, 'the task to run');
    await admin.core.deleteNamespacedPod({ name: status.podName, namespace: env.namespace, gracePeriodSeconds: 0 });
    const ended = await runner.result('deleted-oob');
    expect(ended).toMatchObject({ phase: 'lost', reason: 'Deleted' });
    await waitFor(async () => (await runnerPods(env.namespace)).every((p) => p.metadata!.name !== status.podName), 15_000, 'the deleted pod to go (finalizer released)');
  });

  it('refuses to adopt a pod of the same name built from another spec (409, spec hash differs)', async () => {
    const status = await runner.submit({ taskId: 'adopt-probe', taskType: 'report', ...exits(0) });
    await runner.result('adopt-probe');
    // the same name, made by someone else with another spec, outside the runner's label
    const foreign = `rollcall-foreign-task-1`;
    await admin.core.createNamespacedPod({ namespace: env.namespace, body: { metadata: { name: foreign }, spec: { containers: [{ name: 'main', image: 'other:1' }] } } });
    const refused = await rejection(runner.submit({ taskId: 'foreign-task', taskType: 'report' }));
    expect(refused.code).toBe(ErrorCode.CONFLICT);
    expect(runner.get('foreign-task')).toMatchObject({ phase: 'failed', reason: 'SpecConflict' });
    expect(status.podName).toBe('rollcall-adopt-probe-1');
  });
});

describe('bad input', () => {
  it('refuses invalid task ids and types, changing nothing', async () => {
    const before = (await runnerPods(env.namespace)).length;
    for (const task of [
      { taskId: 'has space', taskType: 'report' },
      { taskId: '', taskType: 'report' },
      { taskId: 'x'.repeat(64), taskType: 'report' },
      { taskId: 'ok-id', taskType: 'bad/type' },
      { taskId: 'ok-id', taskType: 'report', attempt: 0 },
      { taskId: 'ok-id', taskType: 'report', timeouts: { run: -5 } },
    ]) {
      const err = await rejection(runner.submit(task));
      expect(err.code, JSON.stringify(task)).toBe(ErrorCode.INVALID_ARGUMENT);
    }
    expect(runner.get('ok-id')).toBeUndefined();
    expect((await runnerPods(env.namespace)).length).toBe(before);
  });

  it('answers NOT_FOUND for an unknown task in cancel and result, undefined in get', async () => {
    expect(runner.get('never-submitted')).toBeUndefined();
    expect((await rejection(runner.cancel('never-submitted'))).code).toBe(ErrorCode.NOT_FOUND);
    expect((await rejection(runner.result('never-submitted'))).code).toBe(ErrorCode.NOT_FOUND);
  });

  it('fails at start, naming the rule, when a template is broken (server-side dry run), missing or empty', async () => {
    const broken = await rejection(startRunner(env, { name: 'broken', templates: [{ name: 'ok', taskTypes: ['a'], template: podTemplate() }, { name: 'bad-cpu', template: { spec: { containers: [{ name: 'main', image: 'x:1', resources: { requests: { cpu: 'lots' } } }] } } }] }));
    expect(broken.code).toBe(ErrorCode.INVALID_CONFIG);
    expect(broken.message).toContain('templates[1] (bad-cpu)');
    const missing = await rejection(startRunner(env, { name: 'broken', templates: [{ name: 'kept', template: { podTemplate: 'no-such-template' } }] }));
    expect(missing.code).toBe(ErrorCode.INVALID_CONFIG);
    expect(missing.message).toContain('no PodTemplate no-such-template');
    const empty = await rejection(startRunner(env, { name: 'broken', templates: [{ name: 'empty', template: { spec: { containers: [] } } }] }));
    expect(empty.code).toBe(ErrorCode.INVALID_CONFIG);
    expect((await rejection(startRunner(env, { name: 'Not_A_Label' }))).code).toBe(ErrorCode.INVALID_CONFIG);
    expect(await runnerPods(env.namespace, 'broken')).toEqual([]);
  });

  it('reads a template from a PodTemplate object in the namespace', async () => {
    await admin.core.createNamespacedPodTemplate({ namespace: env.namespace, body: { metadata: { name: 'reports' }, template: { metadata: { labels: { pool: 'from-podtemplate' } }, spec: { containers: [{ name: 'main', image: 'reports:2' }] } } } });
    const fromObject = await startRunner(env, { name: 'podtemplate', templates: [{ name: 'reports', template: { podTemplate: 'reports' } }] });
    try {
      const status = await fromObject.submit({ taskId: 'from-podtemplate', taskType: 'report' });
      const pod = await admin.core.readNamespacedPod({ namespace: env.namespace, name: status.podName });
      expect(pod.metadata?.labels?.pool).toBe('from-podtemplate');
      expect(pod.spec?.containers[0]?.image).toBe('reports:2');
      await fromObject.cancel('from-podtemplate', { graceSeconds: 0 });
    } finally {
      await fromObject.close();
    }
  });

  it('refuses an identity without the pod permissions with PERMISSION_DENIED naming what it lacks', async () => {
    await admin.applyManifest('rollcall-member.yaml', env.namespace);
    const member = await (await import('@rollcall/tools/testenv')).serviceAccountKubeconfig(env.namespace, 'rollcall-member');
    const err = await rejection(startRunner({ namespace: env.namespace, kubeconfig: member }, { name: 'refused' }));
    expect(err.code).toBe(ErrorCode.PERMISSION_DENIED);
    expect(err.message).toContain('pods');
    expect(err.message).toContain('create');
  });
});

export type { TaskStatus };

describe('two runners of one name without a registry (a rollout: the old process still running)', () => {
  it('the older one steps down once it sees the newer term\'s stamp on a pod: it stops leading and creates nothing more', async () => {
    const older = await startRunner(env, { name: 'rollout' });
    expect(older.isLeader).toBe(true);
    const newer = await startRunner(env, { name: 'rollout' });
    expect(newer.isLeader).toBe(true);
    try {
      // the newer term creates the pod, stamped with its term: the older one's pod informer shows it
      await newer.submit({ taskId: 'after-rollout', taskType: 'report', ...exits(0, { runMs: 200 }) });
      await waitFor(() => !older.isLeader || undefined, 15_000, 'the older runner to see the newer term and step down');
      expect(newer.isLeader).toBe(true);
      expect((await newer.result('after-rollout')).phase).toBe('succeeded');
      await newer.submit({ taskId: 'after-step-down', taskType: 'report', ...exits(0) });
      expect((await newer.result('after-step-down')).phase).toBe('succeeded');
      expect(older.isLeader).toBe(false);
      expect(older.queueDepth).toBe(0);
    } finally {
      await newer.close();
      await older.close();
    }
  });
});
