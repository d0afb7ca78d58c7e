import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rejection } from '@rollcall/conformance';
import type { Logger } from '@rollcall/core';
import { ApiClient, loadKubeConfig, userAgent } from '@rollcall/kube-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directoryLogSink } from '../src/log-sink.js';
import { buildPod } from '../src/pod-build.js';
import { openTaskView, type TaskView } from '../src/task-view.js';
import { CANCEL_REQUESTED_ANNOTATION, recordName } from '../src/task-record.js';
import { TaskStore } from '../src/task-store.js';
import type { TaskStatus } from '../src/task.js';
import { admin, queuedRecord, runnerNamespace } from './runner-env.js';

/**
 * TaskView on the real API server, as the runner's own service account (the
 * shipped Role): task records written with TaskStore stand in for a runner;
 * a pod made as a first-generation runner makes it stands for a task with no
 * record. Nothing here needs a runner.
 */

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const RUNNER = 'view';
let env: { namespace: string; kubeconfig: string };
let logDir: string;
const closers: (() => void)[] = [];

function adminStore(runner = RUNNER): TaskStore {
  const store = new TaskStore({ client: new ApiClient(admin.kc, 10_000, userAgent('task-view-test')), namespace: env.namespace, runner, logger: quiet });
  closers.push(() => store.close());
  return store;
}

function view(runner = RUNNER): TaskView {
  const v = openTaskView({ kubeConfig: loadKubeConfig({ kubeconfig: env.kubeconfig }), namespace: env.namespace, name: runner, logs: { dir: logDir } });
  closers.push(() => v.close());
  return v;
}

const ended = (taskId: string, change: Partial<TaskStatus>, attempt = 1): TaskStatus => ({ taskId, taskType: 'report', tags: {}, attempt, phase: 'succeeded', podName: `${RUNNER}-${taskId}-${attempt}`, template: 'default', submittedAt: '2026-12-07T16:00:00.000Z', finishedAt: '2026-12-07T16:01:00.000Z', ...change });

/** A ConfigMap with the record label that this version cannot read: garbage, or a newer format. */
async function unreadable(taskId: string, data: Record<string, string>): Promise<string> {
  const name = recordName(RUNNER, taskId);
  await admin.core.createNamespacedConfigMap({ namespace: env.namespace, body: { metadata: { name, labels: { 'rollcall.dev/task-record': RUNNER, 'rollcall.dev/task-id': taskId } }, data } });
  return name;
}

beforeAll(async () => {
  env = await runnerNamespace('task-view');
  logDir = mkdtempSync(join(tmpdir(), 'rollcall-task-view-'));
});

afterAll(async () => {
  for (const close of closers.splice(0)) close();
  rmSync(logDir, { recursive: true, force: true });
  if (env) await admin.core.deleteNamespace({ name: env.namespace }).catch(() => {});
});

describe('TaskView on task records', () => {
  it('list, get: queued, finished and done records, a task with only a pod (no record), and a corrupt and a newer-format record skipped and named, never thrown', async () => {
    const store = adminStore();
    await store.create(queuedRecord('waits'));
    const fin = await store.create(queuedRecord('fails'));
    await store.update(fin.record, { ...fin.record.body, state: 'finished', status: ended('fails', { phase: 'failed', reason: 'Error', exitCode: 3 }) }, { term: 1 });
    const ack = await store.create(queuedRecord('acked'));
    await store.update(ack.record, { ...ack.record.body, state: 'done', ackedAt: Date.UTC(2026, 11, 7, 16, 2), status: ended('acked', { reason: 'Completed' }) }, { term: 1 });
    // a first-generation runner's pod, no record of it; kept pending (no node matches)
    const { pod } = buildPod({ runner: RUNNER, namespace: env.namespace, task: { taskId: 'old', taskType: 'report' }, template: { spec: { containers: [{ name: 'main', image: 'task:1' }], nodeSelector: { 'rollcall.dev/no-such-node': 'x' } } }, templateName: 'default', submittedAt: '2026-12-07T15:00:00.000Z' });
    pod.metadata.finalizers = [];
    await admin.core.createNamespacedPod({ namespace: env.namespace, body: pod as never });
    const corrupt = await unreadable('garbage', { format: '2', record: '{not json' });
    const newer = await unreadable('newer', { format: '3', record: '{"v":3}' });

    const v = view();
    const rows = await v.list();
    expect(rows.map((r) => [r.taskId, r.attempt, r.phase, r.source, r.record])).toEqual([
      // by submit time (the pod's first), then id
      ['old', 1, 'pending', 'pod', undefined],
      ['acked', 1, 'succeeded', 'record', 'done'],
      ['fails', 1, 'failed', 'record', 'finished'],
      ['waits', 1, 'queued', 'record', 'queued'],
    ]);
    expect(rows.find((r) => r.taskId === 'fails')).toMatchObject({ reason: 'Error', exitCode: 3 });
    expect(v.unreadable()).toEqual([
      expect.objectContaining({ name: corrupt, code: 'CORRUPT_RECORD' }),
      expect.objectContaining({ name: newer, code: 'SCHEMA_MISMATCH' }),
    ].sort((a, b) => (a.name < b.name ? -1 : 1)));

    expect(await v.get('waits')).toMatchObject({ phase: 'queued', podName: `${RUNNER}-waits-1`, template: 'default' });
    expect(await v.get('acked')).toMatchObject({ phase: 'succeeded', reason: 'Completed' });
    // no record: its pods (a first-generation runner)
    expect(await v.get('old')).toMatchObject({ phase: 'pending', podName: `${RUNNER}-old-1` });
    expect(await v.get('nothing')).toBeUndefined();
    // one task whose record cannot be read: that task's read says so, typed
    expect(await rejection(v.get('newer'))).toMatchObject({ code: 'SCHEMA_MISMATCH' });
  });

  it('logs: a task with no pod left is read from the sink at its record\'s attempt, not the latest stored; a queued one with none is NOT_FOUND', async () => {
    const store = adminStore();
    const created = await store.create(queuedRecord('logged', { task: { taskId: 'logged', taskType: 'report', attempt: 2 } }));
    await store.update(created.record, { ...created.record.body, state: 'finished', status: ended('logged', { phase: 'failed', reason: 'Error' }, 2) }, { term: 1 });
    const sink = directoryLogSink(logDir);
    const key = { namespace: env.namespace, runner: RUNNER, taskId: 'logged' };
    await sink.append({ ...key, attempt: 1 }, '2026-12-07T16:00:00.000000000Z attempt one\n');
    await sink.append({ ...key, attempt: 2 }, '2026-12-07T16:00:01.000000000Z attempt two\n');
    // a later attempt's log that the record does not hold (a stale file): not read
    await sink.append({ ...key, attempt: 3 }, '2026-12-07T16:00:02.000000000Z attempt three\n');
    const lines: string[] = [];
    for await (const line of await view().logs('logged')) lines.push(line.text);
    expect(lines).toEqual(['attempt two']);

    await store.create(queuedRecord('not-yet'));
    expect(await rejection(view().logs('not-yet'))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('cancel of a queued task: the request annotation on its record, then the leader\'s end read from the record (played here by a store that writes it)', async () => {
    const leader = adminStore();
    await leader.create(queuedRecord('to-cancel'));
    // the leader's part: on a cancel request, write the end in its term, clearing the request
    await leader.start({
      upsert: (record) => {
        if (record.body.task.taskId !== 'to-cancel' || record.cancelRequested === undefined || record.body.state !== 'queued') return;
        const status = ended('to-cancel', { phase: 'cancelled', reason: 'Cancelled', message: record.cancelRequested });
        void leader.update(record, { ...record.body, state: 'finished', status }, { term: 1, clearRequests: true });
      },
    });
    const answer = await view().cancel('to-cancel', 'bad input', { waitMs: 15_000 });
    expect(answer).toMatchObject({ outcome: 'cancelled', status: { phase: 'cancelled', reason: 'Cancelled', message: 'bad input' } });
  });

  it('cancel with no runner leading: unconfirmed after the wait, the request kept on the record; an ended task is not asked; a task with no record is NOT_FOUND', async () => {
    const store = adminStore('unled');
    await store.create(queuedRecord('waits-on'));
    const v = view('unled');
    expect(await v.cancel('waits-on', 'no leader', { waitMs: 300 })).toMatchObject({ outcome: 'unconfirmed', status: { phase: 'queued', reason: 'CancelRequested', message: 'no leader' } });
    const stored = await admin.core.readNamespacedConfigMap({ namespace: env.namespace, name: recordName('unled', 'waits-on') });
    expect(stored.metadata!.annotations![CANCEL_REQUESTED_ANNOTATION]).toBe('no leader');

    const created = await store.create(queuedRecord('over'));
    const written = await store.update(created.record, { ...created.record.body, state: 'finished', status: ended('over', { phase: 'failed', reason: 'Error' }) }, { term: 1 });
    const before = written.type === 'written' ? written.record.resourceVersion : '';
    expect(await view('unled').cancel('over', 'late')).toMatchObject({ outcome: 'already-ended', status: { phase: 'failed', reason: 'Error' } });
    expect((await admin.core.readNamespacedConfigMap({ namespace: env.namespace, name: recordName('unled', 'over') })).metadata!.resourceVersion).toBe(before);

    expect(await rejection(v.cancel('never-submitted'))).toMatchObject({ code: 'NOT_FOUND' });
  });
});
