import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { ManualClock } from '@rollcall/core/testing';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { PodRunner, TaskStatus } from '../src/index.js';
import { admin, exits, podTemplate, runnerNamespace, startRunner } from './runner-env.js';

// Every way Kubernetes ends a task's pod, on kwok, with the exact status the kubelet or the
// controller writes (v1.36 source; the unit test kubelet-endings.test.ts names where each is
// written) put through the pod's status subresource as they put it; and scheduling gates,
// which the API server marks at create and the scheduler honours, on the runner's ManualClock.
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;
let gates: PodRunner;
let clock: ManualClock;
const MINUTE = 60_000;

beforeAll(async () => {
  env = await runnerNamespace('pod-endings');
  runner = await startRunner(env, {
    name: 'endings',
    templates: [
      { name: 'retrying', taskTypes: ['retrying'], template: podTemplate(), retry: { maxAttempts: 2, backoffMs: 100, retryOn: { reasons: ['NodeShutdown'] } } },
      { name: 'default', template: podTemplate() },
    ],
  });
  clock = new ManualClock(Date.now());
  gates = await startRunner(env, { name: 'gates', clock, templates: [{ name: 'gated', template: podTemplate({ schedulingGates: [{ name: 'rollcall.dev/admission' }] }) }] });
});

afterAll(async () => {
  await runner?.close();
  await gates?.close();
});

const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
const now = () => new Date(Math.floor(Date.now() / 1000) * 1000).toISOString();
const target = (reason: string, message: string) => ({ type: 'DisruptionTarget', status: 'True', reason, message, lastTransitionTime: now() });
/** The task container `main` ended with `exitCode` now, as the kubelet reports it after the kill. */
const mainEnded = (exitCode: number) => [{ name: 'main', image: 'registry.example/task:1', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt: now(), finishedAt: now() } } }];

async function running(r: PodRunner, taskId: string, attempt = 1): Promise<string> {
  await waitFor(() => r.get(taskId)?.phase === 'running' && r.get(taskId)?.attempt === attempt, 20_000, `task ${taskId} attempt ${attempt} to run`);
  return r.get(taskId)!.podName;
}

const patchStatus = (name: string, status: Record<string, unknown>) => admin.core.patchNamespacedPodStatus({ name, namespace: env.namespace, body: { status } }, strategic);

describe('a pod the kubelet ends', () => {
  it('graceful node shutdown with a SIGTERM handler that exits 0: lost with NodeShutdown, not succeeded, and retried by a policy that names it', async () => {
    await runner.submit({ taskId: 'shutdown', taskType: 'retrying', ...exits(0, { runMs: 5000 }) });
    const podName = await running(runner, 'shutdown');
    // pkg/kubelet/nodeshutdown killPods' status function; the kubelet does not delete the pod
    const message = 'Pod was terminated in response to imminent node shutdown.';
    await patchStatus(podName, { phase: 'Failed', reason: 'Terminated', message, conditions: [target('TerminationByKubelet', message)], containerStatuses: mainEnded(0) });
    const final = await runner.result('shutdown');
    expect(final).toMatchObject({ phase: 'succeeded', attempt: 2, previousAttempts: [{ attempt: 1, podName, phase: 'lost', reason: 'NodeShutdown', exitCode: 0 }] });
  });

  it('node-pressure eviction and kubelet preemption: EvictedByKubelet and PreemptedByKubelet', async () => {
    const eviction = 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. Container main was using 2Gi, request is 0, has larger consumption of memory. ';
    const endings: [string, Record<string, unknown>, string][] = [
      ['pressure', { phase: 'Failed', reason: 'Evicted', message: eviction, conditions: [target('TerminationByKubelet', eviction)], containerStatuses: mainEnded(137) }, 'EvictedByKubelet'],
      ['preempting', { phase: 'Failed', reason: 'Preempting', message: 'Preempted in order to admit critical pod', conditions: [target('TerminationByKubelet', 'Pod was preempted by Kubelet to accommodate a critical pod.')], containerStatuses: mainEnded(0) }, 'PreemptedByKubelet'],
    ];
    await Promise.all(
      endings.map(async ([taskId, status, reason]) => {
        await runner.submit({ taskId, taskType: 'report', ...exits(0, { runMs: 60_000 }) });
        await patchStatus(await running(runner, taskId), status);
        expect(await runner.result(taskId)).toMatchObject({ phase: 'lost', reason, message: status.message });
      }),
    );
  });
});

describe('a pod a controller marks and deletes', () => {
  it('pod GC (Failed and marked, then force-deleted), the scheduler\'s preemption and the taint manager (marked, then deleted): each its own reason', async () => {
    const endings: [string, Record<string, unknown>, number | undefined, string][] = [
      // pkg/controller/podgc markFailedAndDeletePodWithCondition: phase Failed with the condition, then a delete with grace 0
      ['gc', { phase: 'Failed', conditions: [target('DeletionByPodGC', 'PodGC: node no longer exists')] }, 0, 'PodGarbageCollected'],
      // pkg/scheduler/framework/preemption: the condition (apply status), then a delete with the pod's grace
      ['preempted', { conditions: [target('PreemptionByScheduler', 'default-scheduler: preempting to accommodate a higher priority pod')] }, undefined, 'Preempted'],
      // pkg/controller/tainteviction: the condition, then a delete
      ['tainted', { conditions: [target('DeletionByTaintManager', 'Taint manager: deleting due to NoExecute taint')] }, undefined, 'TaintManagerEviction'],
    ];
    await Promise.all(
      endings.map(async ([taskId, status, grace, reason]) => {
        await runner.submit({ taskId, taskType: 'report', ...exits(0, { runMs: 60_000 }) });
        const podName = await running(runner, taskId);
        await patchStatus(podName, status);
        // the runner may have recorded the Failed pod and let it go first (404), as it may beside the real pod GC
        await admin.core.deleteNamespacedPod({ name: podName, namespace: env.namespace, ...(grace === undefined ? {} : { gracePeriodSeconds: grace }) }).catch((err: { code?: number }) => {
          if (err.code !== 404) throw err;
        });
        expect(await runner.result(taskId)).toMatchObject({ phase: 'lost', reason });
      }),
    );
  });
});

describe('a pod with scheduling gates', () => {
  const statusOf = (taskId: string): TaskStatus | undefined => gates.get(taskId);

  it('waits behind its gates past the start timeout, and its start timeout counts from the ungating', async () => {
    const { podName } = await gates.submit({ taskId: 'admitted', taskType: 'report', timeouts: { start: 2 * MINUTE }, ...exits(0, { runMs: 200 }) });
    await waitFor(() => statusOf('admitted')?.pendingCause === 'gated', 15_000, 'the task to be pending, gated');
    expect(statusOf('admitted')).toMatchObject({ phase: 'pending', reason: 'SchedulingGated', message: 'waiting for its scheduling gates to be removed: rollcall.dev/admission' });
    const pod = await admin.core.readNamespacedPod({ name: podName, namespace: env.namespace });
    expect(pod.status?.conditions).toContainEqual(expect.objectContaining({ type: 'PodScheduled', status: 'False', reason: 'SchedulingGated' }));
    await clock.advance(60 * MINUTE); // an hour in the admission queue
    expect(statusOf('admitted')?.phase).toBe('pending');
    // the queue admits it: the gate comes off (Kueue removes its gate the same way)
    await admin.core.patchNamespacedPod({ name: podName, namespace: env.namespace, body: { spec: { schedulingGates: null } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    expect(await gates.result('admitted')).toMatchObject({ phase: 'succeeded', ungatedAt: clock.wallNow().toISOString() });
  });

  it('ends timed-out with SchedulingGated past its own gated timeout', async () => {
    // The gated time counts from the API server's own timestamp: the runner's wall clock agrees with the server's, as
    // in production, not an hour ahead as the case above left it.
    clock.skewWall(Date.now() - clock.wallNow().getTime());
    await gates.submit({ taskId: 'never-admitted', taskType: 'report', timeouts: { start: 2 * MINUTE, gated: 30 * MINUTE } });
    await waitFor(() => statusOf('never-admitted')?.pendingCause === 'gated', 15_000, 'the task to be pending, gated');
    await clock.advance(28 * MINUTE);
    expect(statusOf('never-admitted')?.phase).toBe('pending');
    await clock.advance(3 * MINUTE);
    expect(await gates.result('never-admitted')).toMatchObject({ phase: 'timed-out', reason: 'SchedulingGated', message: expect.stringContaining('pending (gated) past its timeout') });
  });
});
