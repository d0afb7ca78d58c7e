import { AuthorizationV1Api } from '@kubernetes/client-node';
import { waitFor } from '@rollcall/conformance';
import type { Logger } from '@rollcall/core';
import { ApiClient, type ApiRequest, loadKubeConfig, type RequestContext, type StreamHandlers, userAgent } from '@rollcall/kube-client';
import { serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASK_RECORD_LABEL, dataBytes, encodeRecord, recordName, type TaskRecord, type TaskRecordBody } from '../src/task-record.js';
import { TaskStore, type TaskStoreHandlers } from '../src/task-store.js';
import { admin } from './runner-env.js';

/**
 * The task store on the real API server, as a service account whose Role has
 * exactly the ConfigMap verbs the store uses (get, list, watch, create,
 * update, patch, delete): conditional writes, the informer, request patches.
 * Every request the store sends is recorded at the client, so the test reads
 * the preconditions it actually sent; the server's 409 shows they are checked.
 */

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** The API client, recording what it sends. */
class RecordingClient extends ApiClient {
  readonly sent: ApiRequest[] = [];
  override request<T>(req: ApiRequest): Promise<T> {
    this.sent.push(req);
    return super.request<T>(req);
  }
}

/** A client whose watch lines can be held back: the informer shows nothing newer until they are let through, in order. */
class HeldWatchClient extends RecordingClient {
  private held: { event: boolean; deliver: () => void }[] | undefined;
  override stream(path: string, context: RequestContext, handlers: StreamHandlers, format?: 'json' | 'text'): Promise<{ abort(): void }> {
    const line = (value: unknown) => {
      if (!this.held) return handlers.line(value);
      this.held.push({ event: (value as { type?: string }).type !== 'BOOKMARK', deliver: () => handlers.line(value) });
    };
    return super.stream(path, context, { ...handlers, line }, format);
  }
  hold(): void {
    this.held ??= [];
  }
  /** Lets the held lines through, in order, up to the `events`-th event (bookmarks aside); all of them, and holds no more, without it. */
  release(events?: number): void {
    const held = this.held ?? [];
    if (events === undefined) this.held = undefined;
    let passed = 0;
    while (held.length > 0 && (events === undefined || passed < events)) {
      const next = held.shift()!;
      if (next.event) passed++;
      next.deliver();
    }
  }
  /** Held events, bookmarks aside. */
  get holding(): number {
    return this.held?.filter((h) => h.event).length ?? 0;
  }
}

let namespace: string;
let kubeconfig: string;
const clients: RecordingClient[] = [];
const stores: TaskStore[] = [];

function client(): RecordingClient {
  const c = new RecordingClient(loadKubeConfig({ kubeconfig }), 10_000, userAgent('task-store-test'));
  clients.push(c);
  return c;
}

async function openStore(runner: string, handlers: TaskStoreHandlers = {}, c = client()): Promise<TaskStore> {
  const store = new TaskStore({ client: c, namespace, runner, logger: quiet });
  stores.push(store);
  await store.start(handlers);
  return store;
}

let seq = 0;
const body = (taskId: string, change: Partial<TaskRecordBody> = {}): TaskRecordBody => ({
  v: 2,
  state: 'queued',
  task: { taskId, taskType: 'report', args: ['--id', taskId], attempt: 1 },
  template: 'default',
  specHash: 'h1',
  submittedAt: '2026-12-07T16:00:00.000Z',
  seq: ++seq,
  ...change,
});

const cmPath = (name: string) => `/api/v1/namespaces/${namespace}/configmaps/${name}`;
const stored = (name: string) => admin.core.readNamespacedConfigMap({ namespace, name });

beforeAll(async () => {
  namespace = await admin.namespace('task-store');
  const account = 'task-store';
  await admin.core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: account } } });
  await admin.objects.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: account, namespace }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] }] } as never);
  await admin.objects.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: account, namespace }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account }, subjects: [{ kind: 'ServiceAccount', name: account, namespace }] } as never);
  const authz = admin.kc.makeApiClient(AuthorizationV1Api);
  const user = `system:serviceaccount:${namespace}:${account}`;
  await waitFor(
    async () => (await authz.createSubjectAccessReview({ body: { spec: { user, resourceAttributes: { namespace, verb: 'delete', resource: 'configmaps' } } } })).status?.allowed === true || undefined,
    30_000,
    `the authorizer to grant ${account} its Role`,
  );
  kubeconfig = await serviceAccountKubeconfig(namespace, account);
}, 60_000);

afterAll(() => {
  for (const store of stores) store.close();
  for (const c of clients) c.close();
});

describe('the task store on the API server', () => {
  it('every PUT and DELETE carries the resourceVersion read: a stale one is refused (409), nothing changes', async () => {
    const c = client();
    const store = await openStore('conditional', {}, c);
    const created = await store.create(body('t-1'), 1);
    expect(created.type).toBe('created');
    const v1 = created.record;
    expect(v1.writeTerm).toBe(1);

    const finished = await store.update(v1, { ...v1.body, state: 'finished', status: { taskId: 't-1', taskType: 'report', tags: {}, attempt: 1, phase: 'succeeded', podName: 'p', template: 'default', submittedAt: v1.body.submittedAt } }, { term: 2 });
    expect(finished.type).toBe('written');
    const v2 = (finished as { record: TaskRecord }).record;
    expect(v2.resourceVersion).not.toBe(v1.resourceVersion);
    expect(v2.writeTerm).toBe(2);

    // a deposed writer's update at the resourceVersion it read before: refused, the stored record as it was
    const before = await stored(v1.name);
    expect(await store.update(v1, { ...v1.body, task: { ...v1.body.task, attempt: 2 } }, { term: 1 })).toEqual({ type: 'conflict', code: 'CONFLICT' });
    expect(await store.delete(v1)).toEqual({ type: 'conflict', code: 'CONFLICT' });
    // a write meant for another object of the same name (deleted and made again): refused by its uid, the resourceVersion matching
    const otherUid = '00000000-0000-0000-0000-000000000000';
    expect(await store.update({ ...v2, uid: otherUid }, v2.body, { term: 2 })).toEqual({ type: 'conflict', code: 'CONFLICT' });
    expect(await store.delete({ ...v2, uid: otherUid })).toEqual({ type: 'conflict', code: 'CONFLICT' });
    const after = await stored(v1.name);
    expect(after.metadata!.resourceVersion).toBe(before.metadata!.resourceVersion);
    expect(after.data).toEqual(before.data);

    expect(await store.delete(v2)).toEqual({ type: 'deleted' });
    expect(await store.delete(v2)).toEqual({ type: 'conflict', code: 'NOT_FOUND' });
    expect(await store.update(v2, v2.body, { term: 2 })).toEqual({ type: 'conflict', code: 'NOT_FOUND' });

    // what went over the wire: every PUT at the resourceVersion and uid read, every DELETE with both preconditions
    const puts = c.sent.filter((r) => r.method === 'PUT');
    const deletes = c.sent.filter((r) => r.method === 'DELETE');
    expect(puts.map((r) => (r.body as { metadata: { resourceVersion: string; uid: string } }).metadata)).toEqual([
      expect.objectContaining({ resourceVersion: v1.resourceVersion, uid: v1.uid }),
      expect.objectContaining({ resourceVersion: v1.resourceVersion, uid: v1.uid }),
      expect.objectContaining({ resourceVersion: v2.resourceVersion, uid: otherUid }),
      expect.objectContaining({ resourceVersion: v2.resourceVersion, uid: v2.uid }),
    ]);
    expect(deletes.map((r) => (r.body as { preconditions: unknown }).preconditions)).toEqual([
      { uid: v1.uid, resourceVersion: v1.resourceVersion },
      { uid: otherUid, resourceVersion: v2.resourceVersion },
      { uid: v2.uid, resourceVersion: v2.resourceVersion },
      { uid: v2.uid, resourceVersion: v2.resourceVersion },
    ]);
    expect(c.sent.filter((r) => r.method === 'PATCH')).toEqual([]);
  });

  it('a create where the record exists reads the stored one back (an unfenced submit carries no term)', async () => {
    const store = await openStore('exists');
    const first = await store.create(body('t-2'));
    expect(first.type).toBe('created');
    expect(first.record.writeTerm).toBeUndefined();
    const again = await store.create(body('t-2', { specHash: 'other' }), 5);
    expect(again).toEqual({ type: 'exists', record: first.record });
    expect((await stored(first.record.name)).metadata!.annotations).toBeUndefined();
  });

  it('caughtUp resolves once the informer holds what a write returned (read-your-writes), and at once when it already does', async () => {
    const store = await openStore('caught-up');
    const created = await store.create(body('t-cu'));
    if (created.type !== 'created') throw new Error('not created');
    await store.caughtUp(created.record);
    expect(store.get('t-cu')?.resourceVersion).toBe(created.record.resourceVersion);
    await store.caughtUp(created.record); // already held: resolves without an event
    // a second store's informer, which may not have seen it yet, waits for it
    const other = await openStore('caught-up');
    const second = await store.create(body('t-cu2'));
    if (second.type !== 'created') throw new Error('not created');
    await other.caughtUp(second.record);
    expect(other.get('t-cu2')?.resourceVersion).toBe(second.record.resourceVersion);
  });

  it("a write's answer is in the writer's cache at once, its informer held back; the informer's older events do not undo it, its own event is told", async () => {
    const c = new HeldWatchClient(loadKubeConfig({ kubeconfig }), 10_000, userAgent('task-store-test'));
    clients.push(c);
    const upserts: TaskRecord[] = [];
    const store = await openStore('own-writes', { upsert: (r) => upserts.push(r) }, c);
    const created = await store.create(body('t-own'), 1);
    if (created.type !== 'created') throw new Error('not created');
    await waitFor(() => upserts.some((r) => r.resourceVersion === created.record.resourceVersion) || undefined, 10_000, 'the informer to show the create');

    c.hold();
    const other = await openStore('own-writes');
    const asked = await other.requestCancel('t-own', 'operator asked');
    if (asked.type !== 'written') throw new Error('not patched');
    await waitFor(() => c.holding > 0 || undefined, 10_000, 'the held informer to be sent the cancel request');
    // what the leader decided from the record it read: its own write is what its get shows, though its informer has not shown even the request yet
    const current = await admin.core.readNamespacedConfigMap({ namespace, name: created.record.name });
    expect(current.metadata!.resourceVersion).toBe(asked.record.resourceVersion);
    expect(store.get('t-own')?.resourceVersion).toBe(created.record.resourceVersion);
    const status = { taskId: 't-own', taskType: 'report', tags: {}, attempt: 1, phase: 'cancelled' as const, reason: 'Cancelled', message: 'operator asked', podName: 'p', template: 'default', submittedAt: created.record.body.submittedAt };
    const ended = await store.update(asked.record, { ...created.record.body, state: 'finished', status }, { term: 1, clearRequests: true });
    if (ended.type !== 'written') throw new Error('not written');
    expect(store.get('t-own')).toEqual(ended.record);
    expect(store.shown('t-own')).toBe(created.record.resourceVersion); // what the informer showed: a term's decisions wait for it
    expect(upserts.filter((r) => r.resourceVersion === ended.record.resourceVersion)).toEqual([]); // the handlers hear it from the informer
    const listed = store.list().find((r) => r.name === ended.record.name);
    expect(listed?.body.state).toBe('finished');
    // a create's answer, too
    const fresh = await store.create(body('t-own-2'), 1);
    expect(store.get('t-own-2')).toEqual(fresh.record);

    // the informer catches up: the request's event (older than the write) leaves the cache as written and is not told; the write's own event is told
    await waitFor(() => c.holding >= 3 || undefined, 10_000, 'the held informer to be sent the write and the create');
    c.release(1);
    expect(store.get('t-own')).toEqual(ended.record);
    expect(store.shown('t-own')).toBe(asked.record.resourceVersion);
    expect(upserts.some((r) => r.resourceVersion === asked.record.resourceVersion)).toBe(false);
    c.release();
    expect(upserts.find((r) => r.resourceVersion === ended.record.resourceVersion)).toEqual(ended.record);
    expect(store.shown('t-own')).toBe(ended.record.resourceVersion);
    expect(upserts.find((r) => r.name === fresh.record.name)).toEqual(fresh.record);
    expect(store.get('t-own')).toEqual(ended.record);
    await store.caughtUp(ended.record);
  });

  it('caughtUp still waiting when its store closes rejects with CLOSED; asked after the close, at once', async () => {
    const c = new HeldWatchClient(loadKubeConfig({ kubeconfig }), 10_000, userAgent('task-store-test'));
    clients.push(c);
    const store = await openStore('closing', {}, c);
    c.hold();
    const writer = await openStore('closing');
    const created = await writer.create(body('t-close'));
    if (created.type !== 'created') throw new Error('not created');
    await waitFor(() => c.holding > 0 || undefined, 10_000, 'the held informer to be sent the create');
    let settled: { outcome: 'resolved' } | { outcome: 'rejected'; err: unknown } | undefined;
    store.caughtUp(created.record).then(
      () => (settled = { outcome: 'resolved' }),
      (err: unknown) => (settled = { outcome: 'rejected', err }),
    );
    expect(settled).toBeUndefined();
    store.close();
    expect(await waitFor(() => settled, 5000, 'the wait to end with the store')).toMatchObject({ outcome: 'rejected', err: { code: 'CLOSED' } });
    await expect(store.caughtUp(created.record)).rejects.toMatchObject({ code: 'CLOSED' });
    c.release(); // held lines reach a closed informer: nothing more settles
  });

  it('a request annotation patch does not change the body; it moves the resourceVersion, so a write decided before it is refused', async () => {
    const seen: TaskRecord[] = [];
    const store = await openStore('requests', { upsert: (r) => seen.push(r) });
    const { record } = await store.create(body('t-3'), 1);
    const follower = await openStore('requests');
    const cancelled = await follower.requestCancel('t-3', 'operator asked');
    expect(cancelled.type).toBe('written');
    const patched = (cancelled as { record: TaskRecord }).record;
    expect(patched.body).toEqual(record.body);
    expect(patched.cancelRequested).toBe('operator asked');
    expect(patched.writeTerm).toBe(1);
    const next = { taskId: 't-3', taskType: 'report', attempt: 2 };
    const resubmitted = (await follower.requestSubmit('t-3', next)) as { record: TaskRecord };
    expect(resubmitted.record.body).toEqual(record.body);
    expect(resubmitted.record.submitRequested).toEqual(next);
    expect((await stored(record.name)).data).toEqual(encodeRecord('requests', record.body).data);

    // the leader's informer sees the requests
    await waitFor(() => seen.find((r) => r.submitRequested !== undefined && r.cancelRequested !== undefined), 10_000, 'the leader to see both requests');
    // the leader's write from before the requests: refused, so no request is overwritten unseen
    expect(await store.update(record, { ...record.body, state: 'finished', status: { taskId: 't-3', taskType: 'report', tags: {}, attempt: 1, phase: 'succeeded', podName: 'p', template: 'default', submittedAt: record.body.submittedAt } }, { term: 1 })).toEqual({ type: 'conflict', code: 'CONFLICT' });
    // from the record with the requests: kept unless the write decided them
    const current = store.get('t-3')!;
    const kept = (await store.update(current, { ...current.body, seq: current.body.seq }, { term: 1 })) as { record: TaskRecord };
    expect(kept.record).toMatchObject({ cancelRequested: 'operator asked', submitRequested: next });
    const decided = (await store.update(kept.record, { ...current.body, state: 'finished', status: { taskId: 't-3', taskType: 'report', tags: {}, attempt: 1, phase: 'cancelled', reason: 'Cancelled', message: 'operator asked', podName: 'p', template: 'default', submittedAt: record.body.submittedAt } }, { term: 1, clearRequests: true })) as { record: TaskRecord };
    expect(decided.record.cancelRequested).toBeUndefined();
    expect(decided.record.submitRequested).toBeUndefined();
    expect(await follower.requestCancel('absent', 'x')).toEqual({ type: 'conflict', code: 'NOT_FOUND' });
  });

  it('a record that cannot be read is reported, not thrown; the others are listed; a foreign ConfigMap is not followed', async () => {
    const runner = 'garbage';
    const writer = await openStore(runner);
    await writer.create(body('fine'), 1);
    await admin.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `${runner}-task-bad`, labels: { [TASK_RECORD_LABEL]: runner } }, data: { format: '2', record: '{not json' } } });
    await admin.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `${runner}-task-newer`, labels: { [TASK_RECORD_LABEL]: runner } }, data: { format: '3', record: '{"v":3}' } } });
    await admin.core.createNamespacedConfigMap({ namespace, body: { metadata: { name: `${runner}-app-config` }, data: { format: 'x' } } });
    const reported: [string, string][] = [];
    const store = await openStore(runner, { unreadable: (name, err) => reported.push([name, err.code]) });
    expect(store.list().map((r) => r.body.task.taskId)).toEqual(['fine']);
    expect(reported.sort()).toEqual([[`${runner}-task-bad`, 'CORRUPT_RECORD'], [`${runner}-task-newer`, 'SCHEMA_MISMATCH']]);
    expect([...store.unreadableRecords().keys()].sort()).toEqual([`${runner}-task-bad`, `${runner}-task-newer`]);
    // fixed: read again, no longer reported
    await admin.core.replaceNamespacedConfigMap({ namespace, name: `${runner}-task-bad`, body: { ...encodeRecord(runner, body('bad')), metadata: { name: `${runner}-task-bad`, labels: { [TASK_RECORD_LABEL]: runner } } } as never });
    await waitFor(() => store.list().some((r) => r.body.task.taskId === 'bad') || undefined, 10_000, 'the fixed record read');
    expect([...store.unreadableRecords().keys()]).toEqual([`${runner}-task-newer`]);
  });

  it('a submit over 256 KiB is refused with PAYLOAD_TOO_LARGE before any request', async () => {
    const c = client();
    const store = await openStore('large', {}, c);
    const sent = c.sent.length;
    await expect(store.create(body('huge', { task: { taskId: 'huge', taskType: 'report', env: { PAD: 'x'.repeat(262_144) } } }))).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(c.sent.length).toBe(sent);
    await expect(stored(recordName('large', 'huge'))).rejects.toBeDefined();
  });

  it('1000 queued records created and read back in submit order after a fresh informer start', async () => {
    const runner = 'thousand';
    const writer = new TaskStore({ client: client(), namespace, runner, logger: quiet });
    // ids reverse-alphabetical, 10 submits per millisecond: the name order and the list order are not the submit order
    const bodies = Array.from({ length: 1000 }, (_, i) => body(`task-${String(999 - i).padStart(4, '0')}`, { submittedAt: new Date(Date.UTC(2026, 11, 7, 16) + Math.floor(i / 10)).toISOString(), seq: i }));
    const started = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < bodies.length) {
        const b = bodies[next++]!;
        expect((await writer.create(b)).type).toBe('created');
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const createMs = performance.now() - started;

    const listStarted = performance.now();
    const upserts: string[] = [];
    const store = await openStore(runner, { upsert: (r) => upserts.push(r.name) });
    const listMs = performance.now() - listStarted;
    expect(store.lists).toBe(1);
    expect(upserts.length).toBe(1000);
    const order = store.inSubmitOrder().map((r) => r.body.task.taskId);
    expect(order).toEqual(bodies.map((b) => b.task.taskId));
    expect(order).not.toEqual([...order].sort());

    const object = await stored(recordName(runner, 'task-0000'));
    const bytes = dataBytes(object.data);
    const objectBytes = Buffer.byteLength(JSON.stringify(object));
    console.log(`1000 queued records: created in ${Math.round(createMs)} ms (16 in flight, ${(createMs / 1000).toFixed(2)} ms each), listed by a fresh informer in ${Math.round(listMs)} ms; ${bytes} bytes of data per record, ${objectBytes} bytes as the API server returns it`);
  }, 120_000);
});

