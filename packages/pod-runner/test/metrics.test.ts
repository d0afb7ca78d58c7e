import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection, waitFor } from '@rollcall/conformance';
import { type MetricsServer, registerPodRunnerMetrics, serveMetrics } from '@rollcall/metrics';
import { AuditLog, compactServer, requireTestEnv } from '@rollcall/tools/testenv';
import { type MetricSample, parsePrometheusText, sampleValue, scrapeMetrics, scrapeUntil } from '@rollcall/tools/test-kit';
import { Registry as PromRegistry } from 'prom-client';
import type { PodRunner } from '../src/index.js';
import { admin, enforcedPodQuota, exits, podTemplate, runnerNamespace, runnerPods, startRunner, waits } from './runner-env.js';

/** @rollcall/metrics' pod runner metrics, from a runner on kwok, scraped over HTTP in Prometheus's text format. */
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;
let server: MetricsServer;
let url: string;
const prom = new PromRegistry();

beforeAll(async () => {
  env = await runnerNamespace('pod-metrics');
  runner = await startRunner(env, {
    capacity: { total: 1 },
    templates: [
      { name: 'flaky', taskTypes: ['flaky'], retry: { maxAttempts: 2, backoffMs: 100, retryOn: { exitCodes: { operator: 'In', values: [3] } } }, template: podTemplate() },
      { name: 'default', template: podTemplate() },
    ],
  });
  registerPodRunnerMetrics(runner, prom);
  server = await serveMetrics(prom, { port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${server.port}/metrics`;
});

afterAll(async () => {
  await runner?.close();
  await server?.close();
});

const value = (samples: MetricSample[], name: string, labels: Record<string, string> = {}) => sampleValue(samples, name, labels) ?? 0;
/** The sum of every sample of `name` whose labels include `labels`. */
const total = (samples: MetricSample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
/** `rollcall_pod_runner_requests_total` by `<verb> <resource>`, every outcome, watches left out (a watch request outlives a window). */
const requestCounts = (samples: MetricSample[]) => {
  const counts: Record<string, number> = {};
  for (const s of samples) if (s.name === 'rollcall_pod_runner_requests_total' && s.labels.verb !== 'watch') counts[`${s.labels.verb} ${s.labels.resource}`] = (counts[`${s.labels.verb} ${s.labels.resource}`] ?? 0) + s.value;
  return counts;
};

describe('a pod runner\'s metrics', () => {
  it('count tasks by phase, the queue, pending time by cause and the ends by reason; the request counts are the audit log\'s', async () => {
    const audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => {
      await admin.core.readNamespacedPod({ namespace: env.namespace, name }).catch(() => undefined);
    });
    const before = await scrapeMetrics(url);
    expect(value(before, 'rollcall_pod_runner_info', { runner: 'rollcall', namespace: env.namespace })).toBe(1);
    expect(value(before, 'rollcall_pod_runner_leader')).toBe(1);
    const window = audit.open();

    // capacity 1: a pod held waiting on its image keeps the two others in the queue
    await runner.submit({ taskId: 'held', taskType: 'report', ...waits('ImagePullBackOff') });
    await Promise.all(['queued-1', 'queued-2'].map((taskId) => runner.submit({ taskId, taskType: 'report', ...exits(0, { runMs: 200 }) })));
    const waiting = await scrapeUntil(url, 'two tasks queued behind one pending on its image', (s) => value(s, 'rollcall_pod_runner_tasks', { phase: 'pending', task_type: 'report' }) === 1 && runner.get('held')?.pendingCause === 'image-pull', 30_000);
    expect(value(waiting, 'rollcall_pod_runner_tasks', { phase: 'queued', task_type: 'report' })).toBe(2);
    expect(value(waiting, 'rollcall_pod_runner_queue_depth')).toBe(2);

    // registered later, another prom registry is told the tasks that have not ended
    const late = new PromRegistry();
    const lateMetrics = registerPodRunnerMetrics(runner, late);
    const lateScrape = parsePrometheusText(await late.metrics());
    expect(value(lateScrape, 'rollcall_pod_runner_tasks', { phase: 'queued', task_type: 'report' })).toBe(2);
    expect(value(lateScrape, 'rollcall_pod_runner_tasks', { phase: 'pending', task_type: 'report' })).toBe(1);
    lateMetrics.close();
    expect(late.getSingleMetric('rollcall_pod_runner_tasks')).toBeUndefined();

    await runner.cancel('held');
    for (const id of ['queued-1', 'queued-2']) expect((await runner.result(id)).phase).toBe('succeeded');
    await waitFor(async () => (await runnerPods(env.namespace)).length === 0, 15_000, 'every pod to be deleted');
    const after = await scrapeMetrics(url);
    for (const phase of ['queued', 'pending', 'running', 'unknown']) expect(value(after, 'rollcall_pod_runner_tasks', { phase, task_type: 'report' }), phase).toBe(0);
    expect(value(after, 'rollcall_pod_runner_queue_depth')).toBe(0);
    expect(value(after, 'rollcall_pod_runner_tasks_finished_total', { phase: 'succeeded', reason: 'Completed', task_type: 'report' })).toBe(2);
    expect(value(after, 'rollcall_pod_runner_tasks_finished_total', { phase: 'cancelled', reason: 'Cancelled', task_type: 'report' })).toBe(1);
    // every pod was pending on its scheduling first; only the held one waited on its image, until its cancel
    expect(value(after, 'rollcall_pod_runner_pending_seconds_count', { cause: 'scheduling' })).toBe(3);
    expect(value(after, 'rollcall_pod_runner_pending_seconds_count', { cause: 'image-pull' })).toBe(1);
    expect(value(after, 'rollcall_pod_runner_pending_seconds_sum', { cause: 'image-pull' })).toBeGreaterThan(0);

    // each request the runner made in the window, by verb and resource, as the API server logged it
    const user = `system:serviceaccount:${env.namespace}:rollcall-pod-runner`;
    const audited: Record<string, number> = {};
    for (const e of await audit.requests(window)) {
      if (e.user?.username !== user || e.verb === 'watch') continue;
      const key = `${e.verb} ${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
      audited[key] = (audited[key] ?? 0) + 1;
    }
    const counted = requestCounts(await scrapeMetrics(url));
    const inWindow = Object.fromEntries(Object.entries(counted).map(([k, v]) => [k, v - (requestCounts(before)[k] ?? 0)]).filter(([, v]) => v !== 0));
    expect(inWindow).toEqual(audited);
    expect(inWindow['create pods']).toBe(3);
  });

  it('count a retry by the ended attempt\'s reason, and the last attempt\'s end once', async () => {
    expect(await runner.submit({ taskId: 'fails-twice', taskType: 'flaky', ...exits(3, { runMs: 200 }) })).toBeDefined();
    expect(await runner.result('fails-twice')).toMatchObject({ phase: 'failed', attempt: 2 });
    const samples = await scrapeMetrics(url);
    expect(value(samples, 'rollcall_pod_runner_retries_total', { reason: 'Error', task_type: 'flaky' })).toBe(1);
    expect(value(samples, 'rollcall_pod_runner_tasks_finished_total', { phase: 'failed', reason: 'Error', task_type: 'flaky' })).toBe(1);
  });

  it('count a pod watch broken by 410 Gone (REVISION_TOO_OLD), which the runner relists', async () => {
    const before = value(await scrapeMetrics(url), 'rollcall_pod_runner_watch_restarts_total', { code: 'REVISION_TOO_OLD' });
    const lists = runner.podLists;
    await runner.submit({ taskId: 'across-410', taskType: 'report', ...exits(0, { runMs: 1500 }) });
    await compactServer('kubernetes');
    expect((await runner.result('across-410')).phase).toBe('succeeded');
    expect(runner.podLists).toBeGreaterThan(lists);
    const samples = await scrapeMetrics(url);
    expect(value(samples, 'rollcall_pod_runner_watch_restarts_total', { code: 'REVISION_TOO_OLD' })).toBe(before + (runner.podLists - lists));
  });

  it('count a create the quota refuses as a requeue, and its queue deadline as the end', async () => {
    const quotaEnv = await runnerNamespace('pod-metrics-quota');
    await enforcedPodQuota(quotaEnv.namespace, 'no-pods', 0);
    const starved = await startRunner(quotaEnv, { requeueDelayMs: 200 });
    const own = new PromRegistry();
    registerPodRunnerMetrics(starved, own);
    try {
      await starved.submit({ taskId: 'never-admitted', taskType: 'report', timeouts: { queue: 1500 } });
      expect((await starved.result('never-admitted')).reason).toBe('QueueTimeout');
      const samples = parsePrometheusText(await own.metrics());
      const requeues = value(samples, 'rollcall_pod_runner_requeues_total', { reason: 'QuotaExceeded' });
      expect(requeues).toBeGreaterThan(0);
      // each requeue is one refused create
      expect(total(samples, 'rollcall_pod_runner_requests_total', { verb: 'create', resource: 'pods', code: 'PERMISSION_DENIED' })).toBe(requeues);
      expect(value(samples, 'rollcall_pod_runner_tasks_finished_total', { phase: 'timed-out', reason: 'QueueTimeout', task_type: 'report' })).toBe(1);
      expect(value(samples, 'rollcall_pod_runner_tasks', { phase: 'queued', task_type: 'report' })).toBe(0);
    } finally {
      await starved.close();
    }
    // closing the runner removes its metrics
    expect(own.getSingleMetric('rollcall_pod_runner_requests_total')).toBeUndefined();
  });

  it('refuse, with INVALID_ARGUMENT and nothing registered, a second runner on the same prom registry and arguments that are not a runner and a prom registry', async () => {
    const before = prom.getMetricsAsArray().length;
    expect(await rejection(async () => registerPodRunnerMetrics(runner, prom))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await rejection(async () => registerPodRunnerMetrics({} as never, new PromRegistry()))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await rejection(async () => registerPodRunnerMetrics(runner, {} as never))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(prom.getMetricsAsArray()).toHaveLength(before);
  });
});
