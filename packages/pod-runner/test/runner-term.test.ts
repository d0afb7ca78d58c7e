import { waitFor } from '@rollcall/conformance';
import { type Logger, systemClock } from '@rollcall/core';
import { ApiClient, loadKubeConfig, ResourceInformer, userAgent } from '@rollcall/kube-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog, requireTestEnv } from '@rollcall/tools/testenv';
import { DEFAULT_DECIDE_SETTINGS } from '../src/decide.js';
import { buildPod, podName } from '../src/pod-build.js';
import { RUNNER_LABEL, TASK_ID_LABEL, type Pod } from '../src/pod.js';
import { RunnerTerm } from '../src/runner-term.js';
import type { TaskRecordBody } from '../src/task-record.js';
import { cancelTask, submitTask } from '../src/task-requests.js';
import { TaskStore } from '../src/task-store.js';
import type { Task, TaskStatus } from '../src/task.js';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KWOK_LOG_CONTAINER, kwokContainerLogPath } from '@rollcall/tools/testenv';
import { LogCapture } from '../src/log-capture.js';
import { readStoredLog } from '../src/log-read.js';
import { directoryLogSink } from '../src/log-sink.js';
import { admin, enforcedPodQuota, exits, podTemplate, runnerNamespace } from './runner-env.js';

/**
 * A runner term alone — no PodRunner façade, no election: a term number, a
 * record store, and kwok running the pods it creates. Tasks are submitted as
 * records (as a follower or `rollcall tasks` would); the term creates their
 * pods within capacity, writes each end, hands it over and, once
 * acknowledged, marks the record done and deletes the pod. Capacity is judged
 * from the pods themselves, through a watch of the test's own.
 */

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const RUNNER = 'rterm';
const CAPACITY = 2;
const template = podTemplate();
let namespace: string;
const closers: (() => unknown)[] = [];

beforeAll(async () => {
  namespace = await admin.namespace('runner-term', { forPods: true });
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

let seq = 0;
function record(task: Task, ns = namespace, from = template): TaskRecordBody {
  const submittedAt = new Date().toISOString();
  const { specHash } = buildPod({ runner: RUNNER, namespace: ns, task, template: from, templateName: 'default', submittedAt });
  return { v: 2, state: 'queued', task: { ...task, attempt: 1 }, template: 'default', specHash, submittedAt, seq: ++seq };
}

/** Every change of the runner's pods in watch order: the most live (not ended) at once, and every task that ever had one. */
async function watchPods(client: ApiClient, ns = namespace) {
  const pods = new Map<string, Pod>();
  const seen = { mostLive: 0, tasks: new Set<string>(), uids: new Map<string, Set<string>>() };
  const count = () => (seen.mostLive = Math.max(seen.mostLive, [...pods.values()].filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed').length));
  const informer = new ResourceInformer<Pod>(
    { client, logger: quiet, path: `/api/v1/namespaces/${ns}/pods`, labelSelector: `${RUNNER_LABEL}=${RUNNER}`, resource: 'pods', namespace: ns, silenceTimeoutMs: 90_000, timeoutSeconds: 300 },
    {
      upsert: (pod) => {
        pods.set(pod.metadata.name, pod);
        seen.tasks.add(pod.metadata.labels![TASK_ID_LABEL]!);
        seen.uids.set(pod.metadata.name, (seen.uids.get(pod.metadata.name) ?? new Set()).add(pod.metadata.uid!));
        count();
      },
      delete: (pod) => void pods.delete(pod.metadata.name),
    },
  );
  closers.push(() => informer.close());
  await informer.start();
  return { seen, pods };
}

/**
 * A plain-HTTP proxy in front of the API server that forwards every request
 * but the first pod create: that one's connection is closed before anything
 * is sent on (the API server never sees it; the client gets a reset), as a
 * create lost on a dropped connection. Returns the pod names of the creates it forwarded.
 */
async function createDroppingProxy(kubeconfig: string) {
  const kube = requireTestEnv('kubernetes');
  const upstream = new URL(kube.server);
  const ca = readFileSync(kube.caFile);
  const state = { dropped: 0, forwarded: [] as string[] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url!, 'http://proxy');
      const body = Buffer.concat(chunks);
      if (req.method === 'POST' && path.pathname.endsWith('/pods') && !path.searchParams.has('dryRun')) {
        if (state.dropped === 0) return void ((state.dropped += 1), req.socket.destroy());
        state.forwarded.push((JSON.parse(body.toString('utf8')) as Pod).metadata.name);
      }
      const up = https.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host }, ca }, (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => req.socket.destroy());
      res.on('close', () => up.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const config = JSON.parse(readFileSync(kubeconfig, 'utf8')) as { clusters: { cluster: Record<string, unknown> }[] };
  for (const c of config.clusters) c.cluster = { server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'insecure-skip-tls-verify': true };
  const file = `${kubeconfig}.via-create-dropping-proxy.json`;
  writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return { kubeconfig: file, state, close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) };
}

describe('RunnerTerm on kwok', () => {
  it('runs submitted records through capacity to finished, hands each over, marks it done on the acknowledgement; a queued cancel makes no pod', async () => {
    const client = new ApiClient(admin.kc, 10_000, userAgent('runner-term-test'));
    closers.push(() => client.close());
    const store = new TaskStore({ client, namespace, runner: RUNNER, logger: quiet });
    closers.push(() => store.close());
    await store.start();
    const { seen, pods } = await watchPods(client);

    const ids = Array.from({ length: 6 }, (_, i) => `t${i}`);
    for (const taskId of ids) expect((await submitTask(store, record({ taskId, taskType: 'report', ...exits(0, { runMs: 300 }) }))).type).toBe('created');
    // a type with no slot: queued until cancelled, whatever the timing
    expect((await submitTask(store, record({ taskId: 'held', taskType: 'held' }))).type).toBe('created');

    const delivered: TaskStatus[] = [];
    const states = new Map<string, string[]>();
    closers.push(store.subscribe({ upsert: (r) => void states.set(r.body.task.taskId, [...(states.get(r.body.task.taskId) ?? []), r.body.state]) }));
    const term = new RunnerTerm({
      client, namespace, runner: RUNNER, term: 3, store, clock: systemClock, logger: quiet,
      templates: new Map([['default', { template }]]),
      capacity: CAPACITY, perTypeCapacity: { held: 0 },
      deliver: (status) => {
        delivered.push(status);
        return Promise.resolve();
      },
    });
    closers.push(() => term.close());
    await term.start();

    await waitFor(() => pods.size > 0 || undefined, 30_000, 'the term to create a pod');
    expect((await cancelTask(store, 'held', 'not wanted')).type).toBe('requested');

    const all = [...ids, 'held'];
    await waitFor(() => all.every((id) => store.get(id)?.body.state === 'done') || undefined, 60_000, 'every record to be done');
    for (const id of ids) {
      const r = store.get(id)!;
      expect(r.body.status).toMatchObject({ phase: 'succeeded', exitCode: 0, attempt: 1 });
      expect(r.writeTerm).toBe(3);
      expect(r.body.ackedAt).toBeTypeOf('number');
      // finished before done: the acknowledgement came after the end was stored
      expect(states.get(id)).toContain('finished');
    }
    expect(store.get('held')!.body.status).toMatchObject({ phase: 'cancelled', reason: 'Cancelled', message: 'not wanted' });
    expect(delivered.map((s) => `${s.taskId}:${s.phase}`).sort()).toEqual([...ids.map((id) => `${id}:succeeded`), 'held:cancelled'].sort());

    expect(seen.mostLive).toBeGreaterThan(0);
    expect(seen.mostLive).toBeLessThanOrEqual(CAPACITY);
    expect([...seen.tasks].sort()).toEqual([...ids].sort());
    // the line is submit order: the first two slots went to the first two submitted
    expect([...seen.tasks].slice(0, CAPACITY).sort()).toEqual(['t0', 't1']);
    await waitFor(() => pods.size === 0 || undefined, 30_000, 'every pod to be released and deleted');
    await term.close();
  });

  it('a quota refusal requeues: nothing ends for it, the queue pauses and resumes, every task is done', async () => {
    const ns = await admin.namespace('runner-term-quota', { forPods: true });
    await enforcedPodQuota(ns, 'two-pods', 2);
    const client = new ApiClient(admin.kc, 10_000, userAgent('runner-term-test'));
    closers.push(() => client.close());
    const store = new TaskStore({ client, namespace: ns, runner: RUNNER, logger: quiet });
    closers.push(() => store.close());
    await store.start();
    const { seen, pods } = await watchPods(client, ns);
    const ids = Array.from({ length: 6 }, (_, i) => `q${i}`);
    for (const taskId of ids) await submitTask(store, record({ taskId, taskType: 'report', ...exits(0, { runMs: 300 }) }, ns));
    // the API server's own count of the refusals: its answers to this client's pod creates in the namespace
    const audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => void (await admin.core.readNamespacedPod({ name, namespace: ns }).catch(() => undefined)));
    const window = audit.open();
    const term = new RunnerTerm({
      client, namespace: ns, runner: RUNNER, term: 1, store, clock: systemClock, logger: quiet,
      templates: new Map([['default', { template }]]),
      capacity: 4, requeueDelayMs: 100,
      deliver: () => Promise.resolve(),
    });
    closers.push(() => term.close());
    await term.start();
    await waitFor(() => ids.every((id) => store.get(id)?.body.state === 'done') || undefined, 60_000, 'every record to be done');
    for (const id of ids) expect(store.get(id)!.body.status).toMatchObject({ phase: 'succeeded', attempt: 1 });
    const creates = (await audit.requests(window)).filter(
      (e) => e.verb === 'create' && e.objectRef?.resource === 'pods' && !e.objectRef.subresource && e.objectRef.namespace === ns && e.userAgent === userAgent('runner-term-test'),
    );
    const refusals = creates.filter((e) => [403, 429].includes(e.responseStatus?.code ?? 0));
    expect(refusals.length).toBeGreaterThan(0);
    // a refused create is requeued, never a second pod: exactly one accepted create per task
    expect(creates.filter((e) => e.responseStatus?.code === 201).map((e) => e.objectRef?.name).sort()).toEqual(ids.map((id) => podName(RUNNER, id, 1)).sort());
    // Not "at most 2 live": the quota controller recounts `used` from its own pod cache, which can lag a create just
    // admitted, so the API server may admit a third pod for a moment (seen 2 in 7 runs). The runner's bound is its capacity.
    expect(seen.mostLive).toBeLessThanOrEqual(4);
    await waitFor(() => pods.size === 0 || undefined, 30_000, 'every pod to be released and deleted');
    await term.close();
  });

  it('a later term resumes where an earlier one was closed: every task done, no pod created twice, capacity kept across both', async () => {
    const ns = await admin.namespace('runner-term-next', { forPods: true });
    const client = new ApiClient(admin.kc, 10_000, userAgent('runner-term-test'));
    closers.push(() => client.close());
    const store = new TaskStore({ client, namespace: ns, runner: RUNNER, logger: quiet });
    closers.push(() => store.close());
    await store.start();
    const { seen, pods } = await watchPods(client, ns);
    const ids = Array.from({ length: 6 }, (_, i) => `n${i}`);
    for (const taskId of ids) await submitTask(store, record({ taskId, taskType: 'report', ...exits(0, { runMs: 400 }) }, ns));
    const delivered = new Set<string>();
    const open = (term: number) => {
      const t = new RunnerTerm({
        client, namespace: ns, runner: RUNNER, term, store, clock: systemClock, logger: quiet,
        templates: new Map([['default', { template }]]),
        capacity: CAPACITY,
        deliver: (status) => void delivered.add(status.taskId),
      });
      closers.push(() => t.close());
      return t;
    };
    const first = open(3);
    await first.start();
    await waitFor(() => ids.filter((id) => store.get(id)?.body.state === 'done').length >= 2 || undefined, 30_000, 'two tasks done in the first term');
    await first.close();
    const second = open(4);
    await second.start();
    await waitFor(() => ids.every((id) => store.get(id)?.body.state === 'done') || undefined, 60_000, 'every record to be done');
    expect([...delivered].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(store.get(id)!.body.status).toMatchObject({ phase: 'succeeded', attempt: 1 });
    expect([...seen.uids.entries()].filter(([, uids]) => uids.size !== 1)).toEqual([]);
    expect(seen.uids.size).toBe(ids.length);
    expect(seen.mostLive).toBeLessThanOrEqual(CAPACITY);
    // the second term wrote the last records: the fence (when bound) would judge them by term 4
    expect(ids.some((id) => store.get(id)!.writeTerm === 4)).toBe(true);
    await waitFor(() => pods.size === 0 || undefined, 30_000, 'every pod to be released and deleted');
    await second.close();
  });

  it("captures a running task's log into the sink, kept once its pod is gone; a rejected hand-over is handed over again from the term's queue", async () => {
    const ns = await admin.namespace('runner-term-logs', { forPods: true });
    const client = new ApiClient(admin.kc, 10_000, userAgent('runner-term-test'));
    closers.push(() => client.close());
    const store = new TaskStore({ client, namespace: ns, runner: RUNNER, logger: quiet });
    closers.push(() => store.close());
    await store.start();
    const { pods } = await watchPods(client, ns);
    const logging = { spec: { containers: [{ name: KWOK_LOG_CONTAINER, image: 'logger:1' }] } };
    const sink = directoryLogSink(mkdtempSync(join(tmpdir(), 'runner-term-logs-')));
    const capture = new LogCapture({ client, logger: quiet, namespace: ns, runner: RUNNER, sink, maxBytes: 1 << 20 });
    await submitTask(store, record({ taskId: 'logged', taskType: 'report', ...exits(0, { runMs: 3000 }) }, ns, logging));
    const handed: string[] = [];
    const term = new RunnerTerm({
      client, namespace: ns, runner: RUNNER, term: 1, store, clock: systemClock, logger: quiet,
      templates: new Map([['default', { template: logging }]]),
      capacity: 1, logs: capture,
      // the first hand-over is refused: the term's queue hands it over again
      deliver: (status) => (handed.push(status.phase), handed.length === 1 ? Promise.reject(new Error('the consumer is down')) : Promise.resolve()),
    });
    closers.push(() => term.close());
    await term.start();
    await waitFor(() => [...pods.values()].some((p) => p.status?.phase === 'Running') || undefined, 30_000, 'the pod to run');
    // kwok serves one file for every such container: only this run's lines count
    const prefix = `term-${process.pid}-${Date.now()}`;
    const kept = Array.from({ length: 4 }, (_, i) => `${prefix} line ${i}`);
    for (const [i, text] of kept.entries()) appendFileSync(kwokContainerLogPath(), `${new Date().toISOString().replace('Z', `${String(i).padStart(6, '0')}Z`)} stdout F ${text}\n`);
    await waitFor(() => store.get('logged')?.body.state === 'done' || undefined, 20_000, 'the record to be done');
    expect(handed).toEqual(['succeeded', 'succeeded']);
    await waitFor(() => pods.size === 0 || undefined, 30_000, 'the pod to be deleted');
    await term.close();
    const stored: string[] = [];
    for await (const line of readStoredLog(sink, capture.key({ taskId: 'logged', attempt: 1 }), {})) if (line.text.startsWith(prefix)) stored.push(line.text);
    expect(stored).toEqual(kept);
  });

  it('a pod create lost on a dropped connection holds its slot only until its expectation expires: the task is created again and every task runs (issue 35)', async () => {
    const env = await runnerNamespace('runner-term-lost-create');
    const proxy = await createDroppingProxy(env.kubeconfig);
    closers.push(() => proxy.close());
    const client = new ApiClient(loadKubeConfig({ kubeconfig: proxy.kubeconfig }), 10_000, userAgent('runner-term-test'));
    closers.push(() => client.close());
    const store = new TaskStore({ client, namespace: env.namespace, runner: RUNNER, logger: quiet });
    closers.push(() => store.close());
    await store.start();
    const ids = ['l0', 'l1'];
    for (const taskId of ids) await submitTask(store, record({ taskId, taskType: 'report', ...exits(0, { runMs: 200 }) }, env.namespace));
    const TTL_MS = 3000;
    const warnings: string[] = [];
    const term = new RunnerTerm({
      client, namespace: env.namespace, runner: RUNNER, term: 1, store, clock: systemClock, logger: { ...quiet, warn: (fields: unknown, message?: string) => void warnings.push(typeof fields === 'string' ? fields : String(message)) },
      templates: new Map([['default', { template }]]),
      // one slot: the task whose create was lost holds it, and nothing else is admitted until that is settled
      capacity: 1,
      settings: { ...DEFAULT_DECIDE_SETTINGS, expectationTtlMs: TTL_MS },
      deliver: () => Promise.resolve(),
    });
    closers.push(() => term.close());
    await term.start();
    expect(proxy.state.dropped).toBe(1);
    // the lost create, as the applier took it: no answer, the pod may have landed; l1 waits for l0's slot
    expect(warnings.filter((w) => w.includes('a pod create got no answer'))).toHaveLength(1);
    expect(term.queueDepth).toBe(1);
    // no event comes for a pod that never landed: only a sync at the expectation's end reads it back (404) and creates again
    await waitFor(() => ids.every((id) => store.get(id)?.body.state === 'done') || undefined, 20_000, 'every record to be done');
    for (const id of ids) expect(store.get(id)!.body.status).toMatchObject({ phase: 'succeeded', attempt: 1 });
    expect(proxy.state.forwarded).toEqual(ids.map((id) => podName(RUNNER, id, 1)));
    await term.close();
  }, 60_000);
});
