import { describe, expect, it } from 'vitest';
import type { Pod, PodCondition } from '../../src/pod.js';
import { readPod } from '../../src/pod-status.js';
import { nextAttempt, RETRYABLE_REASONS, type RetryPolicy } from '../../src/retry-policy.js';
import { at, pod, podDecision, status, T0, timeouts } from './fixtures.js';

// Each ending as Kubernetes writes it (v1.36 source): the pod's status after the kubelet's
// killPodFunc status function, or a controller's DisruptionTarget status patch and its delete.
const now = new Date(T0 + 60_000);
const task = (change = {}, t = timeouts()) => ({ status: status({ phase: 'running', ...change }), timeouts: t });

const SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.'; // pkg/kubelet/nodeshutdown nodeShutdownMessage
const EVICTION_MESSAGE = 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. Container main was using 2Gi, request is 0, has larger consumption of memory. '; // pkg/kubelet/eviction helpers.go formats

/** The task container `main` ended (`exitCode`, at `finishedAt`): what the kubelet reports after the kill. */
const mainEnded = (exitCode: number, finishedAt: string) => [{ name: 'main', ready: false, restartCount: 0, state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt: at(1000), finishedAt } } }];
const target = (reason: string, message: string, lastTransitionTime = at(30_000)) => ({ type: 'DisruptionTarget', status: 'True', reason, message, lastTransitionTime });

/** Graceful node shutdown (pkg/kubelet/nodeshutdown, killPods): phase Failed unless it had succeeded, its reason and message, the condition; the pod is not deleted. */
function shutDown(exitCode: number, finishedAt: string): Pod {
  return pod({ phase: 'Failed', reason: 'Terminated', message: SHUTDOWN_MESSAGE, conditions: [target('TerminationByKubelet', SHUTDOWN_MESSAGE)], containerStatuses: mainEnded(exitCode, finishedAt) });
}

describe('readPod: every way a kubelet or a controller ends a pod, each its own reason', () => {
  it('graceful node shutdown whose SIGTERM handler exits 0 is lost with NodeShutdown, never succeeded', () => {
    expect(readPod(shutDown(0, at(31_000)), now)).toMatchObject({ phase: 'lost', reason: 'NodeShutdown', message: SHUTDOWN_MESSAGE, exitCode: 0 });
    expect(podDecision(task(), shutDown(0, at(31_000)), now)).toMatchObject({ action: 'finish', change: { phase: 'lost', reason: 'NodeShutdown' } });
    // exited 0 in the same second as the mark: the kill's doing as far as anyone can tell
    expect(readPod(shutDown(0, at(30_000)), now)).toMatchObject({ phase: 'lost', reason: 'NodeShutdown' });
  });

  it('graceful node shutdown as kubelets before the DisruptionTarget condition wrote it (1.22 to 1.25: Terminated; 1.20 and 1.21: Shutdown)', () => {
    const v122 = pod({ phase: 'Failed', reason: 'Terminated', message: SHUTDOWN_MESSAGE, containerStatuses: mainEnded(0, at(31_000)) });
    expect(readPod(v122, now)).toMatchObject({ phase: 'lost', reason: 'NodeShutdown' });
    const v120 = pod({ phase: 'Failed', reason: 'Shutdown', message: 'Node is shutting, evicting pods', containerStatuses: mainEnded(0, at(31_000)) });
    expect(readPod(v120, now)).toMatchObject({ phase: 'lost', reason: 'NodeShutdown', message: 'Node is shutting, evicting pods' });
  });

  it('keeps an exit from before the kubelet marked the pod (the task had ended; a sidecar kept the pod up)', () => {
    expect(readPod(shutDown(0, at(20_000)), now)).toMatchObject({ phase: 'succeeded', reason: 'Completed' });
    expect(readPod(shutDown(2, at(20_000)), now)).toMatchObject({ phase: 'failed', exitCode: 2 });
  });

  it('a pod that had succeeded when the node shut down stays succeeded (the kubelet keeps phase Succeeded, overwriting only reason and message)', () => {
    const done = pod({ phase: 'Succeeded', reason: 'Terminated', message: SHUTDOWN_MESSAGE, conditions: [target('TerminationByKubelet', SHUTDOWN_MESSAGE)], containerStatuses: mainEnded(0, at(31_000)) });
    expect(readPod(done, now)).toMatchObject({ phase: 'succeeded' });
  });

  it('node-pressure eviction (pkg/kubelet/eviction, evictPod) is EvictedByKubelet, whatever the container exited with', () => {
    for (const exitCode of [0, 137]) {
      const evicted = pod({ phase: 'Failed', reason: 'Evicted', message: EVICTION_MESSAGE, conditions: [target('TerminationByKubelet', EVICTION_MESSAGE)], containerStatuses: mainEnded(exitCode, at(31_000)) });
      expect(readPod(evicted, now)).toMatchObject({ phase: 'lost', reason: 'EvictedByKubelet', message: EVICTION_MESSAGE });
    }
    // a pod past its ephemeral-storage limit: the same manager, no condition
    const storage = pod({ phase: 'Failed', reason: 'Evicted', message: 'Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ' });
    expect(readPod(storage, now)).toMatchObject({ phase: 'lost', reason: 'EvictedByKubelet' });
  });

  it('kubelet preemption to admit a critical pod (pkg/kubelet/preemption) is PreemptedByKubelet', () => {
    const preempted = pod({
      phase: 'Failed',
      reason: 'Preempting',
      message: 'Preempted in order to admit critical pod',
      conditions: [target('TerminationByKubelet', 'Pod was preempted by Kubelet to accommodate a critical pod.')],
      containerStatuses: mainEnded(0, at(31_000)),
    });
    expect(readPod(preempted, now)).toMatchObject({ phase: 'lost', reason: 'PreemptedByKubelet', message: 'Preempted in order to admit critical pod' });
  });

  it('pod GC marks an orphaned pod Failed before it force-deletes it: PodGarbageCollected, not a failure of the task', () => {
    // pkg/controller/podgc markFailedAndDeletePodWithCondition: phase Failed and the condition, then a delete with grace 0
    const marked = pod({ phase: 'Failed', conditions: [target('DeletionByPodGC', 'PodGC: node no longer exists')], containerStatuses: [{ name: 'main', state: { running: { startedAt: at(1000) } } }] });
    expect(podDecision(task(), marked, now)).toMatchObject({ action: 'finish', change: { phase: 'lost', reason: 'PodGarbageCollected', message: 'PodGC: node no longer exists' } });
    const deleted = { ...marked, metadata: { ...marked.metadata, deletionTimestamp: at(30_000), deletionGracePeriodSeconds: 0 } };
    expect(podDecision(task(), deleted, now)).toMatchObject({ action: 'finish', change: { phase: 'lost', reason: 'PodGarbageCollected' } });
  });

  it('the scheduler\'s preemption, the taint manager and the Eviction API mark a running pod, then delete it: each its own reason', () => {
    const cases: [string, string, string][] = [
      ['PreemptionByScheduler', 'default-scheduler: preempting to accommodate a higher priority pod', 'Preempted'],
      ['DeletionByTaintManager', 'Taint manager: deleting due to NoExecute taint', 'TaintManagerEviction'],
      ['EvictionByEvictionAPI', 'Eviction API: evicting', 'Evicted'],
    ];
    for (const [reason, message, ours] of cases) {
      const marked = pod({ phase: 'Running', conditions: [target(reason, message)], containerStatuses: [{ name: 'main', state: { running: { startedAt: at(1000) } } }] });
      expect(podDecision(task(), marked, now)).toMatchObject({ action: 'run' }); // marked, not yet deleted: it runs on
      // deleted with the pod's grace; its SIGTERM handler exits 0 within it
      const deleted = pod({ phase: 'Succeeded', conditions: [target(reason, message)], containerStatuses: mainEnded(0, at(32_000)) }, { deletionTimestamp: at(60_000), deletionGracePeriodSeconds: 30 });
      expect(podDecision(task(), deleted, now)).toMatchObject({ action: 'finish', change: { phase: 'lost', reason: ours } });
    }
  });

  it('every one of these reasons may be named by a retry policy, and NodeShutdown retries', () => {
    for (const reason of ['NodeShutdown', 'EvictedByKubelet', 'PreemptedByKubelet', 'Preempted', 'Evicted', 'TaintManagerEviction', 'PodGarbageCollected', 'TerminatedByKubelet']) expect(RETRYABLE_REASONS).toContain(reason);
    const policy: RetryPolicy = { maxAttempts: 2, backoffMs: 1000, retryOn: { reasons: ['NodeShutdown'] } };
    expect(nextAttempt(policy, { phase: 'lost', reason: 'NodeShutdown', exitCode: 0 }, 0)).toEqual({ retry: true, delayMs: 1000 });
  });
});

describe('reconcile: scheduling gates', () => {
  const GATED = { type: 'PodScheduled', status: 'False', reason: 'SchedulingGated', message: 'Scheduling is blocked due to non-empty scheduling gates', lastTransitionTime: at(0) }; // pkg/registry/core/pod strategy, at create
  const gated = (conditions = [GATED]) => {
    const p = pod({ phase: 'Pending', conditions });
    p.spec = { ...p.spec, schedulingGates: [{ name: 'kueue.x-k8s.io/admission' }] };
    return p;
  };
  const ungated = (conditions: PodCondition[]) => pod({ phase: 'Pending', conditions });
  const pendingTask = (change = {}, t = timeouts()) => ({ status: status({ phase: 'pending', pendingCause: 'scheduling', ...change }), timeouts: t });

  it('is a pending cause of its own that the start timeout does not count; no bound by default', () => {
    expect(readPod(gated(), now)).toMatchObject({ phase: 'pending', cause: 'gated', since: at(0), reason: 'SchedulingGated', message: 'waiting for its scheduling gates to be removed: kueue.x-k8s.io/admission' });
    expect(podDecision(pendingTask(), gated(), now)).toEqual({ action: 'wait', change: { phase: 'pending', pendingCause: 'gated', reason: 'SchedulingGated', message: 'waiting for its scheduling gates to be removed: kueue.x-k8s.io/admission' }, pendingDeadline: undefined });
    // the gates alone say it: a pod read before the API server's condition
    expect(readPod(gated([]), now)).toMatchObject({ cause: 'gated', since: at(0) });
  });

  it('has its own timeout, counted from the pod\'s creation', () => {
    expect(podDecision(pendingTask({}, timeouts({ gated: 120_000 })), gated(), now)).toMatchObject({ action: 'wait', pendingDeadline: { cause: 'gated', deadline: T0 + 120_000 } });
  });

  it('counts the start timeout from the ungating, as the runner saw it, and keeps that instant', () => {
    const late = new Date(T0 + 3_600_000); // an hour gated, far past the 10-minute start timeout counted from creation
    const seen = podDecision(pendingTask({ pendingCause: 'gated' }), ungated([{ ...GATED }]), late);
    expect(seen).toMatchObject({ action: 'wait', change: { pendingCause: 'scheduling', ungatedAt: late.toISOString() }, pendingDeadline: { cause: 'scheduling', deadline: late.getTime() + 600_000 } });
    // later: the scheduler found no node; PodScheduled keeps the gated condition's transition time (same status, False)
    const unschedulable = ungated([{ ...GATED, reason: 'Unschedulable', message: '0/1 nodes are available' }]);
    const later = new Date(late.getTime() + 5000);
    expect(podDecision(pendingTask({ pendingCause: 'scheduling', ungatedAt: late.toISOString() }), unschedulable, later)).toMatchObject({
      action: 'wait',
      change: { pendingCause: 'unschedulable', ungatedAt: late.toISOString() },
      pendingDeadline: { cause: 'unschedulable', deadline: late.getTime() + 300_000 },
    });
  });

  it('a runner taking over sees an ungating the scheduler has not acted on yet; a pod never gated counts from its creation', () => {
    const late = new Date(T0 + 3_600_000);
    expect(podDecision(pendingTask({ pendingCause: undefined }), ungated([{ ...GATED }]), late)).toMatchObject({ pendingDeadline: { deadline: late.getTime() + 600_000 }, change: { ungatedAt: late.toISOString() } });
    const plain = podDecision(pendingTask(), ungated([]), now);
    expect(plain).toMatchObject({ pendingDeadline: { cause: 'scheduling', deadline: T0 + 600_000 } });
    expect((plain as { change: object }).change).not.toHaveProperty('ungatedAt');
  });
});
