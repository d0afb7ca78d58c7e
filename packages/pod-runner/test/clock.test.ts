import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { ManualClock } from '@rollcall/core/testing';
import { PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions } from '@kubernetes/client-node';
import { type PodRunner } from '../src/index.js';
import { admin, exits, podTemplate, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

// The runner's timers on core's ManualClock, against the real API server: the pods'
// timestamps are real, the runner's time moves only when the test says, so a
// ten-minute timeout is passed in no real time and not a moment before it is due.
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;
let clock: ManualClock;

beforeAll(async () => {
  env = await runnerNamespace('pod-clock');
  clock = new ManualClock(Date.now());
  runner = await startRunner(env, {
    clock,
    templates: [
      { name: 'nowhere', taskTypes: ['nowhere'], template: podTemplate({ nodeSelector: { pool: 'none' } }) },
      { name: 'default', template: podTemplate() },
    ],
  });
});

afterAll(async () => {
  await runner?.close();
});

// The pods' timestamps are real: each case starts with the clock's wall time set to the real time.
beforeEach(() => clock.skewWall(Date.now() - clock.wallNow().getTime()));

const MINUTE = 60_000;

describe('timeouts on an injected clock', () => {
  it('times out an unschedulable pod ten minutes after the scheduler gave up, by the clock, not before', async () => {
    const status = await runner.submit({ taskId: 'clock-unschedulable', taskType: 'nowhere', timeouts: { unschedulable: 10 * MINUTE, start: 60 * MINUTE } });
    await waitFor(() => runner.get('clock-unschedulable')?.pendingCause === 'unschedulable', 15_000, 'the pending cause unschedulable');
    // pod timestamps have whole seconds: the deadline lies between 10 min − 1 s and 10 min + the real time spent so far
    await clock.advance(9 * MINUTE);
    expect(runner.get('clock-unschedulable')?.phase).toBe('pending');
    await clock.advance(2 * MINUTE);
    const ended = await runner.result('clock-unschedulable');
    expect(ended).toMatchObject({ phase: 'timed-out', reason: 'Unschedulable' });
    // stamped by the clock's wall time, at the deadline (the real time spent is well under a second)
    const took = Date.parse(ended.finishedAt!) - Date.parse(ended.submittedAt);
    expect(took).toBeGreaterThanOrEqual(10 * MINUTE - 1000);
    expect(took).toBeLessThanOrEqual(11 * MINUTE);
    await waitFor(async () => (await runnerPods(env.namespace)).every((p) => p.metadata!.name !== status.podName), 15_000, 'the timed-out pod to be deleted');
  });

  it('ends a task that runs past its run timeout of an hour when the clock says so', async () => {
    await runner.submit({ taskId: 'clock-runs-long', taskType: 'report', timeouts: { run: 60 * MINUTE } });
    await waitFor(() => runner.get('clock-runs-long')?.phase === 'running', 15_000, 'the task to run');
    await clock.advance(59 * MINUTE);
    expect(runner.get('clock-runs-long')?.phase).toBe('running');
    await clock.advance(2 * MINUTE);
    expect(await runner.result('clock-runs-long')).toMatchObject({ phase: 'timed-out', reason: 'RunTimeout', message: 'ran longer than its run timeout of 3600000 ms' });
  });
});

describe('a pod in phase Unknown', () => {
  it('is unknown, not pending: no start timer ends it, and after the Unknown bound it is lost with NodeLost', async () => {
    const status = await runner.submit({ taskId: 'clock-unknown', taskType: 'report', timeouts: { start: 2 * MINUTE, unknown: 10 * MINUTE } });
    await waitFor(() => runner.get('clock-unknown')?.phase === 'running', 15_000, 'the task to run');
    // what the node lifecycle controller of old wrote for a pod on a node that stopped reporting
    await admin.core.patchNamespacedPodStatus({ name: status.podName, namespace: env.namespace, body: { status: { phase: 'Unknown', reason: 'NodeLost', message: 'node kwok-node-0 not responding' } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await waitFor(() => runner.get('clock-unknown')?.phase === 'unknown', 15_000, 'the phase unknown');
    expect(runner.get('clock-unknown')).toMatchObject({ reason: 'NodeLost', message: 'node kwok-node-0 not responding' });
    await clock.advance(10 * MINUTE - 1000);
    expect(runner.get('clock-unknown')?.phase).toBe('unknown');
    await clock.advance(1000);
    expect(await runner.result('clock-unknown')).toMatchObject({ phase: 'lost', reason: 'NodeLost' });
  });
});

describe('a kept failed pod', () => {
  it('is deleted when its keep passes, and a refused delete (403) is logged and tried again, never left unhandled', async () => {
    const keepClock = new ManualClock(Date.now());
    const warnings: string[] = [];
    const logger = { debug: () => {}, info: () => {}, error: () => {}, warn: (_: unknown, message?: string) => void warnings.push(message ?? '') };
    const keeper = await startRunner(env, { name: 'keeper', clock: keepClock, logger, keepFailedPodsMs: 10 * MINUTE });
    const rbac = admin.kc.makeApiClient(RbacAuthorizationV1Api);
    const role = await rbac.readNamespacedRole({ name: 'rollcall-pod-runner', namespace: env.namespace });
    const setPodVerbs = (verbs: string[]) =>
      rbac.replaceNamespacedRole({ name: 'rollcall-pod-runner', namespace: env.namespace, body: { ...role, metadata: { name: 'rollcall-pod-runner', namespace: env.namespace }, rules: role.rules!.map((r) => (r.resources?.includes('pods') ? { ...r, verbs } : r)) } });
    const podVerbs = role.rules!.find((r) => r.resources?.includes('pods'))!.verbs;
    try {
      const { podName } = await keeper.submit({ taskId: 'kept', taskType: 'report', ...exits(1, { runMs: 100 }) });
      const failed = await keeper.result('kept');
      expect(failed).toMatchObject({ phase: 'failed', exitCode: 1 });
      const pod = () => admin.core.readNamespacedPod({ name: podName, namespace: env.namespace }).catch(() => undefined);
      await waitFor(async () => (await pod())?.metadata?.finalizers === undefined, 15_000, 'the status recorded and the finalizer off');
      await setPodVerbs(podVerbs.filter((v) => v !== 'delete'));
      // the keep counts from the container's finishedAt (the kubelet's wall clock, whole seconds), which may be
      // up to a second past this clock's start: advance to exactly that deadline
      await keepClock.advance(Date.parse(failed.finishedAt!) + 10 * MINUTE - keepClock.wallNow().getTime());
      // the refused delete fails the task's sync: logged, and the sync tried again after a backoff on the clock
      await waitFor(() => warnings.includes('[rollcall] [pod-runner] a task sync failed; retried'), 15_000, 'the refused delete logged');
      expect(await pod()).toBeDefined();
      await setPodVerbs(podVerbs);
      // RBAC reaches the authorizer a moment later: each second on the clock is one more try
      await waitFor(async () => (await keepClock.advance(1000), (await pod()) === undefined), 15_000, 'the kept pod deleted on a later try');
    } finally {
      await setPodVerbs(podVerbs);
      await keeper.close();
    }
  });
});
