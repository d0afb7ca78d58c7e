import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthorizationV1Api, CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';
import { waitFor } from '@rollcall/conformance';
import type { Logger } from '@rollcall/core';
import { ApiClient, userAgent } from '@rollcall/kube-client';
import { KubeAdmin, KWOK_LOG_CONTAINER, kwokContainerLogPath, readTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// the runner's own record store and pod builder stand in for a runner: none is needed to read and cancel
import { buildPod } from '../../pod-runner/src/pod-build.js';
import { CANCEL_REQUESTED_ANNOTATION, recordName, type TaskRecordBody } from '../../pod-runner/src/task-record.js';
import { TaskStore } from '../../pod-runner/src/task-store.js';
import type { TaskStatus } from '../../pod-runner/src/task.js';
// the task record a submit writes, as the pod runner's own tests make it
import { queuedRecord } from '../../pod-runner/test/runner-env.js';
import { run } from './cli.js';

// The real API server of tools/ (RBAC on) and its kwok, started by the global setup.
const kube = readTestEnv().kubernetes!;
const kc = new KubeConfig();
kc.loadFromFile(kube.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
let namespace: string;
const closers: (() => void)[] = [];

function store(runner: string): TaskStore {
  const s = new TaskStore({ client: new ApiClient(kc, 10_000, userAgent('cli-tasks-test')), namespace, runner, logger: quiet });
  closers.push(() => s.close());
  return s;
}

const ended = (runner: string, body: TaskRecordBody, change: Partial<TaskStatus>): TaskStatus => ({
  taskId: body.task.taskId, taskType: body.task.taskType, tags: {}, attempt: body.task.attempt ?? 1, phase: 'succeeded', podName: `${runner}-${body.task.taskId}-1`, template: body.template, submittedAt: body.submittedAt, finishedAt: '2026-12-07T17:00:00.000Z', ...change,
});

/** Applies what `rollcall manifests --role <role> --namespace <ns>` prints, and waits until the authorizer grants its account `verb resource` (its Role is in the authorizer's cache). */
async function applyRole(role: string, verb: string, resource: string, group = ''): Promise<string> {
  const printed = await run(['manifests', '--role', role, '--namespace', namespace]);
  expect(printed.code, printed.stderr).toBe(0);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const doc of loadAllYaml(printed.stdout) as KubernetesObject[]) await objects.create(doc);
  const authz = kc.makeApiClient(AuthorizationV1Api);
  const account = `rollcall-${role}`;
  const user = `system:serviceaccount:${namespace}:${account}`;
  const groups = ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'];
  await waitFor(async () => (await authz.createSubjectAccessReview({ body: { spec: { user, groups, resourceAttributes: { namespace, verb, resource, group } } } })).status?.allowed === true, 30_000, `the authorizer to grant ${account} its Role`);
  return serviceAccountKubeconfig(namespace, account);
}

beforeAll(async () => {
  namespace = await new KubeAdmin().namespace('cli-tasks', { forPods: true });
});

afterAll(async () => {
  for (const close of closers.splice(0)) close();
  if (namespace) await core.deleteNamespace({ name: namespace }).catch(() => {});
});

describe('rollcall tasks, on the task records', () => {
  it('tasks cancel of a queued task prints cancelled', async () => {
    const where = ['-n', namespace, '--kubeconfig', kube.kubeconfig, '--runner', 'queue'];
    const leader = store('queue');
    await leader.create(queuedRecord('q1'));
    // no runner leads: the test plays the leader's part — on the request, the cancel written in its term
    await leader.start({
      upsert: (record) => {
        if (record.cancelRequested === undefined || record.body.state !== 'queued') return;
        void leader.update(record, { ...record.body, state: 'finished', status: ended('queue', record.body, { phase: 'cancelled', reason: 'Cancelled', message: record.cancelRequested }) }, { term: 1, clearRequests: true });
      },
    });
    const r = await run(['tasks', 'cancel', 'q1', '--reason', 'bad input', ...where]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe('q1: cancelled: bad input\n');
    // no pod was ever made for it
    expect((await core.listNamespacedPod({ namespace, labelSelector: 'rollcall.dev/task-id=q1' })).items).toEqual([]);
  });

  it('tasks cancel with no runner leading: exit 11 after --wait, the request kept on the record; a task whose record ended is not asked; no record is NOT_FOUND', async () => {
    const where = ['-n', namespace, '--kubeconfig', kube.kubeconfig, '--runner', 'unled'];
    const s = store('unled');
    await s.create(queuedRecord('unled-task'));
    const unconfirmed = await run(['tasks', 'cancel', 'unled-task', '--wait', '1', ...where]);
    expect(unconfirmed.code, unconfirmed.stderr).toBe(11);
    expect(unconfirmed.stdout).toBe('unled-task: cancel requested on its task record, but no runner confirmed within 1 s\n');
    expect(unconfirmed.stderr).toContain('the request is kept on its record');
    expect((await core.readNamespacedConfigMap({ namespace, name: recordName('unled', 'unled-task') })).metadata!.annotations![CANCEL_REQUESTED_ANNOTATION]).toBe('cancelled with rollcall tasks cancel');
    const json = await run(['tasks', 'cancel', 'unled-task', '--wait', '0', '--json', ...where]);
    expect(json.code).toBe(11);
    expect(JSON.parse(json.stdout)).toMatchObject({ outcome: 'unconfirmed', status: { taskId: 'unled-task', phase: 'queued', reason: 'CancelRequested' } });
    const bad = await run(['tasks', 'cancel', 'unled-task', '--wait', 'soon', ...where]);
    expect(bad.code).toBe(2);

    const created = await s.create(queuedRecord('failed-task'));
    await s.update(created.record, { ...created.record.body, state: 'finished', status: ended('unled', created.record.body, { phase: 'failed', reason: 'Error', exitCode: 1 }) }, { term: 1 });
    const before = (await core.readNamespacedConfigMap({ namespace, name: recordName('unled', 'failed-task') })).metadata!.resourceVersion;
    const over = await run(['tasks', 'cancel', 'failed-task', ...where]);
    expect(over.code, over.stderr).toBe(0);
    expect(over.stdout).toBe('failed-task: not cancelled: it had ended already; nothing was changed (failed, Error)\n');
    expect((await core.readNamespacedConfigMap({ namespace, name: recordName('unled', 'failed-task') })).metadata!.resourceVersion).toBe(before);
    const none = await run(['tasks', 'cancel', 'never-submitted', ...where]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('NOT_FOUND');
  });

  it('tasks list, show, logs: queued, running (its pod), failed and acknowledged (pod gone) from the records, a first-generation task from its pod; a corrupt record skipped with a warning; read-only; the runner\'s Role is enough, the member Role is refused', async () => {
    const runner = 'listing';
    const where = ['-n', namespace, '--kubeconfig', kube.kubeconfig, '--runner', runner];
    const logDir = mkdtempSync(join(tmpdir(), 'rollcall-cli-task-logs-'));
    const s = store(runner);
    try {
      const acked = await s.create(queuedRecord('acked'));
      await s.update(acked.record, { ...acked.record.body, state: 'done', ackedAt: Date.UTC(2026, 11, 7, 17), status: ended(runner, acked.record.body, { reason: 'Completed' }) }, { term: 1 });
      const fails = await s.create(queuedRecord('fails'));
      await s.update(fails.record, { ...fails.record.body, state: 'finished', status: ended(runner, fails.record.body, { phase: 'failed', reason: 'Error', exitCode: 3 }) }, { term: 1 });
      const runs = await s.create(queuedRecord('runs', { template: 'logging' }));
      await s.create(queuedRecord('waits'));
      // the pod of `runs` as a runner makes it (kwok runs it), and a first-generation runner's pod with no record
      const template = { spec: { containers: [{ name: KWOK_LOG_CONTAINER, image: 'task:1' }] } };
      for (const [task, at] of [[runs.record.body.task, runs.record.body.submittedAt], [{ taskId: 'old', taskType: 'report' }, '2026-12-07T15:00:00.000Z']] as const) {
        const { pod } = buildPod({ runner, namespace, task, template, templateName: 'logging', submittedAt: at });
        pod.metadata.finalizers = [];
        await core.createNamespacedPod({ namespace, body: pod as never });
      }
      await waitFor(async () => (await core.listNamespacedPod({ namespace, labelSelector: `rollcall.dev/runner=${runner}` })).items.every((p) => p.status?.phase === 'Running'), 30_000, 'kwok to run the pods');
      await core.createNamespacedConfigMap({ namespace, body: { metadata: { name: recordName(runner, 'garbage'), labels: { 'rollcall.dev/task-record': runner } }, data: { format: '2', record: '{not json' } } });
      const before = (await core.listNamespacedConfigMap({ namespace, labelSelector: `rollcall.dev/task-record=${runner}` })).items.map((c) => c.metadata!.resourceVersion).sort();

      const table = await run(['tasks', 'list', ...where]);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout.split('\n').filter((l) => l && !l.startsWith('TASK'))).toEqual([
        expect.stringMatching(/^old +1 +report +running +- +\S+ +listing-old-1 +pod$/),
        expect.stringMatching(/^acked +1 +report +succeeded +Completed +- +\S+ +- +record:acknowledged$/),
        expect.stringMatching(/^fails +1 +report +failed +Error +3 +\S+ +- +record:finished$/),
        expect.stringMatching(/^runs +1 +report +running +- +\S+ +listing-runs-1 +pod\+record:queued$/),
        expect.stringMatching(/^waits +1 +report +queued +- +\S+ +- +record:queued$/),
      ]);
      expect(table.stderr).toMatch(new RegExp(`^rollcall: warning: task record ${recordName(runner, 'garbage')} skipped: CORRUPT_RECORD: .+\\n$`));
      const json = await run(['tasks', 'list', '--json', ...where]);
      expect(json.code, json.stderr).toBe(0);
      expect(JSON.parse(json.stdout)).toEqual([
        expect.objectContaining({ taskId: 'old', phase: 'running', source: 'pod' }),
        expect.objectContaining({ taskId: 'acked', phase: 'succeeded', reason: 'Completed', podName: 'listing-acked-1', source: 'record', record: 'done' }),
        expect.objectContaining({ taskId: 'fails', phase: 'failed', exitCode: 3, source: 'record', record: 'finished' }),
        expect.objectContaining({ taskId: 'runs', phase: 'running', podName: 'listing-runs-1', template: 'logging', source: 'pod+record', record: 'queued' }),
        expect.objectContaining({ taskId: 'waits', phase: 'queued', podName: 'listing-waits-1', source: 'record', record: 'queued' }),
      ]);

      const shown = await run(['tasks', 'show', 'waits', '--json', ...where]);
      expect(shown.code, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({ taskId: 'waits', phase: 'queued', template: 'default' });
      const gone = await run(['tasks', 'show', 'acked', ...where]);
      expect(gone.code, gone.stderr).toBe(0);
      expect(gone.stdout).toMatch(/^phase: +succeeded$/m);
      const old = await run(['tasks', 'show', 'old', '--json', ...where]);
      expect(JSON.parse(old.stdout)).toMatchObject({ taskId: 'old', phase: 'running', podName: 'listing-old-1' });
      const missing = await run(['tasks', 'show', 'no-such-task', ...where]);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain('NOT_FOUND');
      const corrupt = await run(['tasks', 'show', 'garbage', ...where]);
      expect(corrupt.code).not.toBe(0);
      expect(corrupt.stderr).toContain('CORRUPT_RECORD');

      // logs: the running task from its pod; an ended one whose pod is gone from the log directory, at its record's attempt
      const line = `cli log line ${Date.now()}`;
      appendFileSync(kwokContainerLogPath(), `${new Date().toISOString().replace('Z', '000000Z')} stdout F ${line}\n`);
      const logs = await run(['tasks', 'logs', 'runs', '--tail', '1', ...where]);
      expect(logs.code, logs.stderr).toBe(0);
      expect(logs.stdout).toBe(`${line}\n`);
      const stored = join(logDir, namespace, runner);
      mkdirSync(stored, { recursive: true });
      writeFileSync(join(stored, 'fails-1.log'), '2026-12-07T16:00:00.000000000Z the stored line\n');
      const fromSink = await run(['tasks', 'logs', 'fails', '--log-dir', logDir, ...where]);
      expect(fromSink.code, fromSink.stderr).toBe(0);
      expect(fromSink.stdout).toBe('the stored line\n');
      const elsewhere = await run(['tasks', 'logs', 'fails', '--log-dir', join(logDir, 'elsewhere'), ...where]);
      expect(elsewhere.code).not.toBe(0);
      expect(elsewhere.stderr).toContain('NOT_FOUND');

      // the runner's own Role is enough; the member Role is refused, typed
      const asRunner = await run(['tasks', 'list', '--json', '-n', namespace, '--kubeconfig', await applyRole('pod-runner', 'watch', 'configmaps'), '--runner', runner]);
      expect(asRunner.code, asRunner.stderr).toBe(0);
      expect(JSON.parse(asRunner.stdout)).toHaveLength(5);
      const asMember = await run(['tasks', 'list', '-n', namespace, '--kubeconfig', await applyRole('member', 'list', 'leases', 'coordination.k8s.io'), '--runner', runner]);
      expect(asMember.code).not.toBe(0);
      expect(asMember.stderr).toContain('PERMISSION_DENIED');
      // read-only: every record as it was
      expect((await core.listNamespacedConfigMap({ namespace, labelSelector: `rollcall.dev/task-record=${runner}` })).items.map((c) => c.metadata!.resourceVersion).sort()).toEqual(before);
    } finally {
      rmSync(logDir, { recursive: true, force: true });
    }
  });
});
