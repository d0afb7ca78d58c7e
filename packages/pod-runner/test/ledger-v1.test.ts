import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { rejection } from '@rollcall/conformance';
import { type Logger, UnavailableError } from '@rollcall/core';
import { ApiClient, type ApiRequest, userAgent } from '@rollcall/kube-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeLedger, ledgerName } from '../src/ledger-format.js';
import { moveLedgerV1 } from '../src/ledger-v1.js';
import { TASK_RECORD_LABEL } from '../src/task-record.js';
import { TaskStore } from '../src/task-store.js';
import type { Task } from '../src/task.js';
import { admin, runnerNamespace, startRunner } from './runner-env.js';

/**
 * Moving a v1 ledger to task records on the real API server: once, again
 * after a kill between the creates and the ledger's PUT (no duplicate), again
 * after a v1 follower's submit lands in between; then a v1 runner refuses the
 * ledger. The move runs as the admin (the store's verbs are not in the shipped
 * Role yet); the v1 runner as the shipped Role's account.
 */

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** Version-1 entries as a version-1 runner wrote them (verbatim): a queued retry, a queued task, a finished status, a tombstone. */
const v1Ledger = (): Record<string, string> => ({
  format: '1',
  'task.ingest-1':
    '{"v":1,"state":"queued","task":{"taskId":"ingest-1","taskType":"ingest","args":["--day","2026-12-03"],"timeouts":{"unschedulable":300000,"imagePull":300000,"start":600000},"attempt":2},"submittedAt":"2026-12-05T10:00:00.000Z","seq":2,"specHash":"3f9a","previousAttempts":[{"attempt":1,"podName":"rollcall-ingest-1-1","phase":"lost","reason":"Evicted","finishedAt":"2026-12-05T10:01:00.000Z"}],"retryAt":1764928870000}',
  'task.a-first':
    '{"v":1,"state":"queued","task":{"taskId":"a-first","taskType":"ingest","attempt":1},"submittedAt":"2026-12-05T10:00:00.000Z","seq":3,"specHash":"5e5e"}',
  'task.report-7':
    '{"v":1,"state":"finished","status":{"taskId":"report-7","taskType":"report","tags":{"tier":"batch"},"attempt":1,"phase":"succeeded","podName":"rollcall-report-7-1","template":"default","submittedAt":"2026-12-05T10:00:00.000Z","reason":"Completed","exitCode":0,"result":{"rows":3},"finishedAt":"2026-12-05T10:02:00.000Z"},"specHash":"77c1"}',
  'task.old-3':
    '{"v":1,"state":"done","status":{"taskId":"old-3","taskType":"report","attempt":1,"phase":"failed","reason":"Error","podName":"rollcall-old-3-1","template":"default","submittedAt":"2026-12-04T10:00:00.000Z","finishedAt":"2026-12-04T10:05:00.000Z"},"specHash":"a1b2","ackedAt":1764842700000}',
});

/** The admin's API client; `before` sees each request first and may throw (a kill) or act (another writer). */
class HookedClient extends ApiClient {
  before: (req: ApiRequest) => Promise<void> | void = () => {};
  override async request<T>(req: ApiRequest): Promise<T> {
    await this.before(req);
    return super.request<T>(req);
  }
}

let env: { namespace: string; kubeconfig: string };
const closers: (() => unknown)[] = [];
const templateOf = (task: Task) => ({ template: `rule-${task.taskType}`, retry: { maxAttempts: 3, backoffMs: 1000, retryOn: { reasons: ['Evicted' as const] } } });

function setup(runner: string) {
  const client = new HookedClient(admin.kc, 10_000, userAgent('ledger-v1-test'));
  const store = new TaskStore({ client, namespace: env.namespace, runner, logger: quiet });
  closers.push(() => store.close(), () => client.close());
  const move = () => moveLedgerV1({ client, namespace: env.namespace, runner, store, term: 4, templateOf });
  return { client, store, move };
}

const ledgerOf = (runner: string) => admin.core.readNamespacedConfigMap({ namespace: env.namespace, name: `pod-runner-${runner}-ledger` });
const recordsOf = async (runner: string) => (await admin.core.listNamespacedConfigMap({ namespace: env.namespace, labelSelector: `${TASK_RECORD_LABEL}=${runner}` })).items;
const writeV1 = (runner: string, data = v1Ledger()) => admin.core.createNamespacedConfigMap({ namespace: env.namespace, body: { metadata: { name: `pod-runner-${runner}-ledger`, labels: { 'rollcall.dev/task-ledger': runner } }, data } });

beforeAll(async () => {
  env = await runnerNamespace('ledger-v1');
}, 60_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe('moving a v1 task ledger to records', () => {
  it('moves every entry once: a record each (done keeps ackedAt), the ledger {format 2, moved 4}; run again, nothing is written', async () => {
    await writeV1('once');
    const { client, store, move } = setup('once');
    expect(await move()).toEqual({ outcome: 'moved', moved: 4, existed: 0 });
    expect((await ledgerOf('once')).data).toEqual({ format: '2', moved: '4' });
    await store.start();
    const byId = new Map(store.list().map((r) => [r.body.task.taskId, r]));
    expect([...byId.keys()].sort()).toEqual(['a-first', 'ingest-1', 'old-3', 'report-7']);
    expect(byId.get('ingest-1')!.body).toMatchObject({ state: 'queued', template: 'rule-ingest', retry: { maxAttempts: 3 }, seq: 2, specHash: '3f9a', retryAt: 1764928870000, task: { attempt: 2, args: ['--day', '2026-12-03'] }, previousAttempts: [{ reason: 'Evicted' }] });
    expect(byId.get('report-7')!.body).toMatchObject({ state: 'finished', template: 'default', specHash: '77c1', task: { taskId: 'report-7', tags: { tier: 'batch' } }, status: { phase: 'succeeded', result: { rows: 3 } } });
    expect(byId.get('old-3')!.body).toMatchObject({ state: 'done', ackedAt: 1764842700000, status: { phase: 'failed', reason: 'Error', tags: {} } });
    for (const record of byId.values()) expect(record.writeTerm).toBe(4);
    // the order a restore takes: the queued ones by submit, then sequence
    expect(store.inSubmitOrder().filter((r) => r.body.state === 'queued').map((r) => r.body.task.taskId)).toEqual(['ingest-1', 'a-first']);

    const writes: string[] = [];
    client.before = (req) => void (req.method !== 'GET' && writes.push(`${req.method} ${req.path}`));
    expect(await move()).toEqual({ outcome: 'already', moved: 4, existed: 0 });
    expect(writes).toEqual([]);
  });

  it('killed midway (after 2 creates, before the PUT), moved again: 4 records, no duplicate, the first two found', async () => {
    await writeV1('killed');
    const { client, move } = setup('killed');
    let creates = 0;
    client.before = (req) => {
      if (req.method === 'POST' && ++creates > 2) throw new UnavailableError('killed: the process ends here');
    };
    expect(await rejection(move())).toMatchObject({ code: 'UNAVAILABLE' });
    expect((await ledgerOf('killed')).data?.format).toBe('1');
    expect(await recordsOf('killed')).toHaveLength(2);

    client.before = () => {};
    expect(await move()).toEqual({ outcome: 'moved', moved: 4, existed: 2 });
    const records = await recordsOf('killed');
    expect(records).toHaveLength(4);
    expect(new Set(records.map((r) => r.metadata!.labels!['rollcall.dev/task-id'])).size).toBe(4);
    expect((await ledgerOf('killed')).data).toEqual({ format: '2', moved: '4' });
  });

  it('a v1 follower\'s submit landing between the read and the PUT: the PUT is refused (409), the ledger read again, the new entry moved too', async () => {
    await writeV1('raced');
    const { client, move } = setup('raced');
    let puts = 0;
    client.before = async (req) => {
      if (req.method !== 'PUT' || ++puts > 1) return;
      const entry = '{"v":1,"state":"queued","task":{"taskId":"late","taskType":"ingest","attempt":1},"submittedAt":"2026-12-05T11:00:00.000Z","seq":1,"specHash":"1a7e"}';
      await admin.core.patchNamespacedConfigMap({ namespace: env.namespace, name: 'pod-runner-raced-ledger', body: { data: { 'task.late': entry } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    };
    expect(await move()).toEqual({ outcome: 'moved', moved: 5, existed: 4 });
    expect(puts).toBe(2);
    expect((await recordsOf('raced')).map((r) => r.metadata!.labels!['rollcall.dev/task-id']).sort()).toEqual(['a-first', 'ingest-1', 'late', 'old-3', 'report-7']);
    expect((await ledgerOf('raced')).data).toEqual({ format: '2', moved: '5' });
  });

  it('the moved ledger: the v1 read (the format a v1 runner and TaskView read) refuses it with SCHEMA_MISMATCH; a runner of this version starts on the records and leaves it as it was', async () => {
    await writeV1('refused');
    const { move } = setup('refused');
    await move();
    const before = (await ledgerOf('refused')).metadata!.resourceVersion;
    const client = new ApiClient(admin.kc, 10_000, userAgent('ledger-v1-test'));
    closers.push(() => client.close());
    // the v1 TaskView's read: a GET, then the v1 decoder
    const v1Read = client.request<{ data?: Record<string, string> }>({ method: 'GET', path: `/api/v1/namespaces/${env.namespace}/configmaps/${ledgerName('refused')}`, context: { verb: 'get', resource: 'configmaps', namespace: env.namespace, name: ledgerName('refused') } }).then((map) => decodeLedger(map.data, ledgerName('refused')));
    expect(await rejection(v1Read)).toMatchObject({ code: 'SCHEMA_MISMATCH' });
    const runner = await startRunner(env, { name: 'refused' });
    closers.push(() => runner.close());
    expect(runner.list().length).toBeGreaterThan(0);
    expect((await ledgerOf('refused')).metadata!.resourceVersion).toBe(before);
  });

  it('no ledger: nothing to move, nothing written', async () => {
    const { client, move } = setup('never');
    const writes: string[] = [];
    client.before = (req) => void (req.method !== 'GET' && writes.push(req.method));
    expect(await move()).toEqual({ outcome: 'absent', moved: 0, existed: 0 });
    expect(writes).toEqual([]);
  });
});
