import { describe, expect, it } from 'vitest';
import type { PodCondition } from '../../src/pod.js';
import { CANCELLED_ANNOTATION, FINALIZER, TASK_CONTAINER_ANNOTATION } from '../../src/pod.js';
import type { RetryPolicy } from '../../src/retry-policy.js';
import { WRITE_TERM_ANNOTATION } from '../../src/task-record.js';
import { ended, observed, ofType, published, record, run, types, written } from './decide-fixtures.js';
import { at, pod, status, T0, timeouts } from './fixtures.js';

// The table cases of reconcile.test.ts, completion.test.ts and kubelet-endings.test.ts, ported: each
// `wait`/`run` is now a published status and a wakeAt, each `finish` a writeRecord of the end.
const now = T0 + 60_000;
const running = pod({ phase: 'Running', containerStatuses: [{ name: 'main', state: { running: { startedAt: at(30_000) } } }] });
const mainEnded = (exitCode: number, finishedAt: string) => [{ name: 'main', state: { terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt: at(1000), finishedAt } } }];
const target = (reason: string, message: string, lastTransitionTime = at(30_000)) => ({ type: 'DisruptionTarget', status: 'True', reason, message, lastTransitionTime });

describe('decide: a pending pod, each cause with its own bound (reconcile.test.ts)', () => {
  it('bounds a pod not yet scheduled by the start timeout from its creation', () => {
    const d = run(observed([pod({ phase: 'Pending' })]), now);
    expect(published(d)).toMatchObject({ phase: 'pending', pendingCause: 'scheduling' });
    expect(d.wakeAt).toBe(T0 + 600_000);
    expect(types(d)).toEqual(['publish']);
  });

  it('bounds an unschedulable pod by the earlier of its own timeout (from the condition) and the start timeout', () => {
    const unschedulable = pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes', lastTransitionTime: at(10_000) }] });
    const d = run(observed([unschedulable]), now);
    expect(published(d)).toMatchObject({ pendingCause: 'unschedulable', reason: 'Unschedulable', message: '0/1 nodes' });
    expect(d.wakeAt).toBe(T0 + 310_000);
    expect(run(observed([unschedulable], { record: record({}, timeouts({ start: 100_000 })) }), now).wakeAt).toBe(T0 + 100_000);
  });

  it("counts an image pull from the kubelet's start of the pod", () => {
    const pulling = pod({ phase: 'Pending', startTime: at(20_000), conditions: [{ type: 'PodScheduled', status: 'True' }], containerStatuses: [{ name: 'main', state: { waiting: { reason: 'ImagePullBackOff' } } }] });
    const d = run(observed([pulling], { record: record({}, timeouts({ imagePull: 1500 })) }), T0 + 20_000);
    expect(published(d)).toMatchObject({ pendingCause: 'image-pull', reason: 'ImagePullBackOff' });
    expect(d.wakeAt).toBe(T0 + 21_500);
  });

  it('bounds a container-config error by the start timeout only', () => {
    const config = pod({ phase: 'Pending', startTime: at(5000), containerStatuses: [{ name: 'main', state: { waiting: { reason: 'CreateContainerConfigError' } } }] });
    const d = run(observed([config], { record: record({}, timeouts({ start: 1500 })) }), T0 + 1000);
    expect(published(d)).toMatchObject({ pendingCause: 'container-config' });
    expect(d.wakeAt).toBe(T0 + 1500);
  });

  it('arms no timer when no bound applies', () => {
    const d = run(observed([pod({ phase: 'Pending' })], { record: record({}, { unschedulable: 1 }) }), now);
    expect(published(d)).toMatchObject({ phase: 'pending', pendingCause: 'scheduling' });
    expect(d.wakeAt).toBeUndefined();
  });

  it('fails at once on InvalidImageName, which no wait cures', () => {
    const invalid = pod({ phase: 'Pending', containerStatuses: [{ name: 'main', state: { waiting: { reason: 'InvalidImageName', message: 'bad' } } }] });
    expect(ended(run(observed([invalid]), now))).toMatchObject({ phase: 'failed', reason: 'InvalidImageName', message: 'bad' });
  });

  it('past the bound fetches the events first, then ends timed-out with them, keeping the pending reason', () => {
    const pulling = pod({ phase: 'Pending', startTime: at(0), containerStatuses: [{ name: 'main', state: { waiting: { reason: 'ImagePullBackOff', message: 'no such image' } } }] });
    const o = observed([pulling], { record: record({}, timeouts({ imagePull: 1500 })) });
    expect(types(run(o, now))).toEqual(['fetchEvents', 'publish']);
    const d = run({ ...o, events: { podName: 'rollcall-t1-1', lines: ['Failed: pull'] } }, now);
    expect(ended(d)).toMatchObject({ phase: 'timed-out', reason: 'ImagePullBackOff', message: 'pending (image-pull) past its timeout: no such image', podEvents: ['Failed: pull'] });
    expect(ofType(d, 'releasePod')).toEqual([]); // the end first: the pod is let go once the record says so
    expect(ended(run({ ...observed([pod({ phase: 'Pending' })]), events: { podName: 'rollcall-t1-1', lines: [] } }, T0 + 600_000))).toMatchObject({ reason: 'PendingTimeout' });
  });
});

describe('decide: running and ended (reconcile.test.ts)', () => {
  it("runs, clearing the pending cause, with the run timeout counted from the container's start; follows the log", () => {
    const d = run(observed([running], { record: record({}, timeouts({ run: 1500 })), memo: { status: status({ pendingCause: 'starting', reason: 'x' }) } }), T0 + 31_000);
    expect(published(d)).toMatchObject({ phase: 'running', startedAt: at(30_000) });
    expect(published(d)).not.toHaveProperty('pendingCause');
    expect(published(d)).not.toHaveProperty('reason');
    expect(d.wakeAt).toBe(T0 + 31_500);
    expect(types(d)).toContain('followLogs');
    expect(run(observed([running]), now).wakeAt).toBeUndefined();
  });

  it("ends RunTimeout past the run bound, apart from the kubelet's DeadlineExceeded", () => {
    expect(ended(run(observed([running], { record: record({}, timeouts({ run: 1500 })) }), T0 + 31_500))).toMatchObject({ phase: 'timed-out', reason: 'RunTimeout', message: 'ran longer than its run timeout of 1500 ms' });
  });

  it('reads success with the exit code and the JSON result', () => {
    const done = pod({ phase: 'Succeeded', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 0, reason: 'Completed', message: '{"rows":12}', startedAt: at(1), finishedAt: at(2) } } }] });
    expect(ended(run(observed([done]), now))).toMatchObject({ phase: 'succeeded', reason: 'Completed', exitCode: 0, result: { rows: 12 }, finishedAt: at(2) });
  });

  it('takes a missing finish time from the wall clock it is given, and nothing else', () => {
    const done = pod({ phase: 'Failed', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 3 } } }] });
    expect(ended(run(observed([done]), now))).toMatchObject({ phase: 'failed', reason: 'Error', exitCode: 3, finishedAt: new Date(now).toISOString() });
  });

  it('reads an eviction as lost, never as a failure of the task', () => {
    expect(ended(run(observed([pod({ phase: 'Failed', reason: 'Evicted', message: 'low memory' })]), now))).toMatchObject({ phase: 'lost', reason: 'EvictedByKubelet', message: 'low memory' });
  });

  it('reads a pod being deleted before it finished as lost', () => {
    expect(ended(run(observed([pod(running.status, { deletionTimestamp: at(40_000) })]), now))).toMatchObject({ phase: 'lost', reason: 'Deleted', message: 'pod rollcall-t1-1 was deleted before it finished' });
  });

  it('ends a task whose pod is marked cancelled (a v1 mark), whatever the pod shows', () => {
    const marked = pod({ phase: 'Succeeded' }, { annotations: { [CANCELLED_ANNOTATION]: 'by hand' } });
    expect(written(run(observed([marked]), now))).toMatchObject({ meaning: 'cancel', body: { status: { phase: 'cancelled', reason: 'Cancelled', message: 'by hand' } } });
  });

  it('only lets the pod go of a task already ended', () => {
    const d = run(observed([running], { record: record({ state: 'finished', status: status({ phase: 'succeeded' }) }), delivery: 'pending' }), now);
    expect(types(d)).toEqual(['releasePod', 'publish']);
  });
});

describe('decide: a pod of an earlier attempt (reconcile.test.ts, release-other)', () => {
  const second = (change = {}) => record({ task: { taskId: 't1', taskType: 'report', tags: {}, attempt: 2, timeouts: timeouts() }, ...change });

  it('lets a finished one go when the finalizer still holds it, and one being deleted though it still runs', () => {
    expect(ofType(run(observed([pod({ phase: 'Succeeded' })], { record: second() }), now), 'releasePod')).toHaveLength(1);
    expect(ofType(run(observed([pod({ phase: 'Running' }, { deletionTimestamp: at(1000) })], { record: second() }), now), 'releasePod')).toHaveLength(1);
  });

  it('deletes it once released and stamped by this term (its log stored), never a pod being deleted already', () => {
    const released = pod({ phase: 'Succeeded' }, { finalizers: [], annotations: { [WRITE_TERM_ANNOTATION]: '1' } });
    expect(types(run(observed([released], { admitted: false, record: second() }), now))).toEqual(['deletePod', 'publish']);
    expect(types(run(observed([released], { admitted: false, record: second(), logsStored: () => false }), now))).toEqual(['followLogs', 'publish']);
    expect(types(run(observed([released], { admitted: false, record: second(), term: 2 }), now))).toEqual(['releasePod', 'publish']); // re-stamped first: the fence judges a delete by the last stamp
    expect(types(run(observed([{ ...released, metadata: { ...released.metadata, deletionTimestamp: at(1) } }], { admitted: false, record: second() }), now))).toEqual(['publish']);
  });

  it('never touches the current attempt of a queued record (changed: an earlier attempt still running is let go too, since the record moved past it)', () => {
    const d = run(observed([pod({ phase: 'Running' }), pod({ phase: 'Pending' }, { name: 'rollcall-t1-2' })], { record: second() }), now);
    expect(ofType(d, 'releasePod').map((a) => a.pod.metadata.name)).toEqual(['rollcall-t1-1']);
  });
});

describe('decide: the task container decides, found by name (completion.test.ts)', () => {
  function withSidecar(podStatus: Parameters<typeof pod>[0]) {
    const p = pod(podStatus, { annotations: { [TASK_CONTAINER_ANNOTATION]: 'main' } });
    p.spec = { containers: [{ name: 'proxy' }, { name: 'main' }], initContainers: [{ name: 'mesh', restartPolicy: 'Always' }, { name: 'setup' }] };
    return p;
  }

  it('ends the task when its container exits though a sidecar listed first still runs', () => {
    const p = withSidecar({ phase: 'Running', containerStatuses: [{ name: 'proxy', state: { running: { startedAt: at(1000) } } }, { name: 'main', state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: at(1000), finishedAt: at(5000) } } }] });
    expect(ended(run(observed([p]), now))).toMatchObject({ phase: 'succeeded', reason: 'Completed', exitCode: 0, finishedAt: at(5000) });
  });

  it('fails with the exit code of the task container; runs only once it runs', () => {
    expect(ended(run(observed([withSidecar({ phase: 'Running', containerStatuses: [{ name: 'proxy', state: { running: {} } }, { name: 'main', state: { terminated: { exitCode: 7, reason: 'Error' } } }] })]), now))).toMatchObject({ phase: 'failed', exitCode: 7 });
    const waiting = withSidecar({ phase: 'Running', startTime: at(500), containerStatuses: [{ name: 'proxy', state: { running: { startedAt: at(1000) } } }, { name: 'main', state: { waiting: { reason: 'ImagePullBackOff', message: 'no image' } } }] });
    expect(published(run(observed([waiting]), now))).toMatchObject({ phase: 'pending', pendingCause: 'image-pull' });
  });

  it("reads OOMKilled and the kubelet's DeadlineExceeded as their own reasons", () => {
    expect(ended(run(observed([pod({ phase: 'Failed', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }] })]), now))).toMatchObject({ phase: 'failed', reason: 'OOMKilled', exitCode: 137 });
    expect(ended(run(observed([pod({ phase: 'Failed', reason: 'DeadlineExceeded', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 137, reason: 'Error' } } }] })]), now))).toMatchObject({ phase: 'timed-out', reason: 'DeadlineExceeded' });
  });

  it('names a failed init container with its own reason; a native sidecar is not one', () => {
    const p = withSidecar({ phase: 'Failed', initContainerStatuses: [{ name: 'mesh', state: { terminated: { exitCode: 1, reason: 'Error' } } }, { name: 'setup', state: { terminated: { exitCode: 2, reason: 'Error', message: 'no config' } } }], containerStatuses: [{ name: 'main', state: { waiting: { reason: 'PodInitializing' } } }] });
    const s = ended(run(observed([p]), now));
    expect(s).toMatchObject({ phase: 'failed', reason: 'InitContainerFailed', message: 'init container setup exited with 2 (Error): no config' });
    expect(s).not.toHaveProperty('exitCode');
  });
});

describe('decide: phase Unknown is its own state (completion.test.ts)', () => {
  const unknown = pod({ phase: 'Unknown', reason: 'NodeLost', message: 'node n1 not responding' });

  it('is unknown, bounded from when this term first saw it (default 300000 ms), never pending', () => {
    const d = run(observed([unknown], { memo: { status: status({ phase: 'running' }) } }), now);
    expect(published(d)).toMatchObject({ phase: 'unknown', reason: 'NodeLost', message: 'node n1 not responding' });
    expect(d.wakeAt).toBe(now + 300_000);
    expect(d.memo.unknownSince).toBe(now);
    // the next sync keeps counting from the first sight
    expect(run(observed([unknown], { memo: d.memo }), now + 10_000).wakeAt).toBe(now + 300_000);
    expect(run(observed([unknown], { record: record({}, timeouts({ unknown: 5000 })) }), now).wakeAt).toBe(now + 5000);
  });

  it('counts from the Ready condition when the pod has one, so a new term resumes the bound', () => {
    const marked = pod({ ...unknown.status, conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: at(10_000) }] });
    expect(run(observed([marked]), now).wakeAt).toBe(T0 + 310_000);
  });

  it('ends as lost with reason NodeLost when the bound passes', () => {
    const d = run(observed([unknown], { record: record({}, timeouts({ unknown: 1000 })), memo: { unknownSince: now - 1000 } }), now);
    expect(ended(d)).toMatchObject({ phase: 'lost', reason: 'NodeLost', message: "the pod's node stopped reporting for 1000 ms: node n1 not responding" });
  });
});

describe('decide: a pod deleted behind the runner (completion.test.ts, kubelet-endings.test.ts)', () => {
  const deleted = (exitCode: number, finishedAt: string, conditions: PodCondition[] = []) =>
    pod({ phase: exitCode === 0 ? 'Succeeded' : 'Failed', conditions, containerStatuses: [{ name: 'main', state: { terminated: { exitCode, finishedAt } } }] }, { deletionTimestamp: at(40_000), deletionGracePeriodSeconds: 30 });

  it('is lost, never succeeded, when the container exited 0 after the delete was asked for; an exit from before stands', () => {
    expect(ended(run(observed([deleted(0, at(11_000))]), now))).toMatchObject({ phase: 'lost', reason: 'Deleted' });
    expect(ended(run(observed([deleted(0, at(10_000))]), now))).toMatchObject({ phase: 'lost', reason: 'Deleted' });
    expect(ended(run(observed([deleted(0, at(9000))]), now))).toMatchObject({ phase: 'succeeded' });
  });

  it('names the disruption Kubernetes gives', () => {
    for (const [condition, reason] of [['EvictionByEvictionAPI', 'Evicted'], ['TerminationByKubelet', 'TerminatedByKubelet'], ['PreemptionByScheduler', 'Preempted'], ['DeletionByTaintManager', 'TaintManagerEviction'], ['DeletionByPodGC', 'PodGarbageCollected']] as [string, string][]) {
      expect(ended(run(observed([deleted(143, at(20_000), [{ type: 'DisruptionTarget', status: 'True', reason: condition }])]), now))).toMatchObject({ phase: 'lost', reason });
    }
  });

  it('graceful node shutdown whose SIGTERM handler exits 0 is lost with NodeShutdown', () => {
    const SHUTDOWN = 'Pod was terminated in response to imminent node shutdown.';
    const shutDown = pod({ phase: 'Failed', reason: 'Terminated', message: SHUTDOWN, conditions: [target('TerminationByKubelet', SHUTDOWN)], containerStatuses: mainEnded(0, at(31_000)) });
    expect(ended(run(observed([shutDown]), now))).toMatchObject({ phase: 'lost', reason: 'NodeShutdown' });
  });

  it('pod GC marks, then force-deletes: PodGarbageCollected either way', () => {
    const marked = pod({ phase: 'Failed', conditions: [target('DeletionByPodGC', 'PodGC: node no longer exists')], containerStatuses: [{ name: 'main', state: { running: { startedAt: at(1000) } } }] });
    expect(ended(run(observed([marked]), now))).toMatchObject({ phase: 'lost', reason: 'PodGarbageCollected', message: 'PodGC: node no longer exists' });
    expect(ended(run(observed([{ ...marked, metadata: { ...marked.metadata, deletionTimestamp: at(30_000), deletionGracePeriodSeconds: 0 } }]), now))).toMatchObject({ reason: 'PodGarbageCollected' });
  });

  it("the scheduler's preemption, the taint manager and the Eviction API mark a running pod, then delete it: each its own reason", () => {
    for (const [reason, message, ours] of [['PreemptionByScheduler', 'preempting', 'Preempted'], ['DeletionByTaintManager', 'NoExecute taint', 'TaintManagerEviction'], ['EvictionByEvictionAPI', 'evicting', 'Evicted']] as [string, string, string][]) {
      const marked = pod({ phase: 'Running', conditions: [target(reason, message)], containerStatuses: [{ name: 'main', state: { running: { startedAt: at(1000) } } }] });
      expect(published(run(observed([marked]), now))).toMatchObject({ phase: 'running' });
      const gone = pod({ phase: 'Succeeded', conditions: [target(reason, message)], containerStatuses: mainEnded(0, at(32_000)) }, { deletionTimestamp: at(60_000), deletionGracePeriodSeconds: 30 });
      expect(ended(run(observed([gone]), now))).toMatchObject({ phase: 'lost', reason: ours });
    }
  });
});

describe('decide: scheduling gates (kubelet-endings.test.ts)', () => {
  const GATED = { type: 'PodScheduled', status: 'False', reason: 'SchedulingGated', message: 'Scheduling is blocked due to non-empty scheduling gates', lastTransitionTime: at(0) };
  const gated = () => {
    const p = pod({ phase: 'Pending', conditions: [GATED] });
    p.spec = { ...p.spec, schedulingGates: [{ name: 'kueue.x-k8s.io/admission' }] };
    return p;
  };
  const ungated = (conditions: PodCondition[]) => pod({ phase: 'Pending', conditions });

  it('a gated pod outlives start: its own cause, no bound by default, its own bound when set', () => {
    const d = run(observed([gated()]), T0 + 3_600_000);
    expect(published(d)).toMatchObject({ phase: 'pending', pendingCause: 'gated', reason: 'SchedulingGated', message: 'waiting for its scheduling gates to be removed: kueue.x-k8s.io/admission' });
    expect(d.wakeAt).toBeUndefined();
    expect(written(d)).toBeUndefined();
    expect(run(observed([gated()], { record: record({}, timeouts({ gated: 120_000 })) }), now).wakeAt).toBe(T0 + 120_000);
  });

  it('counts the start timeout from the ungating as this term saw it, and keeps that instant', () => {
    const late = T0 + 3_600_000;
    const seenGated = run(observed([gated()]), late - 1000);
    const seen = run(observed([ungated([{ ...GATED }])], { memo: seenGated.memo }), late);
    expect(published(seen)).toMatchObject({ pendingCause: 'scheduling', ungatedAt: new Date(late).toISOString() });
    expect(seen.wakeAt).toBe(late + 600_000);
    const unschedulable = ungated([{ ...GATED, reason: 'Unschedulable', message: '0/1 nodes are available' }]);
    const later = run(observed([unschedulable], { memo: seen.memo }), late + 5000);
    expect(published(later)).toMatchObject({ pendingCause: 'unschedulable', ungatedAt: new Date(late).toISOString() });
    expect(later.wakeAt).toBe(late + 300_000);
  });

  it('a pod last seen gated and read next already running, or ended (the read skipped its ungating): ungated when this term saw it', () => {
    const late = T0 + 3_600_000;
    const seenGated = run(observed([gated()]), late - 1000);
    expect(published(run(observed([running], { memo: seenGated.memo }), late))).toMatchObject({ phase: 'running', ungatedAt: new Date(late).toISOString() });
    const done = pod({ phase: 'Succeeded', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: at(30_000), finishedAt: at(31_000) } } }] });
    expect(ended(run(observed([done], { memo: seenGated.memo }), late))).toMatchObject({ phase: 'succeeded', ungatedAt: new Date(late).toISOString() });
    // never gated: no ungating
    expect(published(run(observed([running]), late))?.ungatedAt).toBeUndefined();
  });

  it('a term taking over sees an ungating the scheduler has not acted on yet; a pod never gated counts from its creation', () => {
    const late = T0 + 3_600_000;
    expect(run(observed([ungated([{ ...GATED }])]), late).wakeAt).toBe(late + 600_000);
    expect(run(observed([ungated([])]), now).wakeAt).toBe(T0 + 600_000);
  });
});

describe('decide: creating, cancelling, queue and retries', () => {
  it('creates only a queued, admitted task with no pod of its attempt seen or expected, no cancel, its backoff over', () => {
    expect(types(run(observed([]), now))).toEqual(['createPod', 'publish']);
    expect(types(run(observed([], { admitted: false }), now))).toEqual(['publish']);
    expect(types(run(observed([pod({ phase: 'Pending' })]), now))).not.toContain('createPod');
    const expecting = { podName: 'rollcall-t1-1', attempt: 1, since: now - 1000 };
    expect(run(observed([], { expecting }), now)).toMatchObject({ actions: [{ type: 'publish' }], wakeAt: now + 29_000 });
    expect(types(run(observed([], { expecting }), now + 29_000))).toEqual(['resolveCreate', 'publish']);
    expect(run(observed([], { record: record({ retryAt: now + 5000 }) }), now)).toMatchObject({ actions: [{ type: 'publish', status: { reason: 'RetryBackoff' } }], wakeAt: now + 5000 });
    expect(types(run(observed([], { record: record({ state: 'finished', status: status({ phase: 'succeeded' }) }) }), now))).not.toContain('createPod');
  });

  it('a cancel of a queued task is only writeRecord(cancel); the pod of a cancelled running task goes after', () => {
    const o = observed([], { record: record({}, timeouts(), { cancelRequested: 'by hand' }) });
    const d = run(o, now);
    expect(d.actions.filter((a) => a.type !== 'publish')).toEqual([{ type: 'writeRecord', meaning: 'cancel', body: expect.objectContaining({ state: 'finished', status: expect.objectContaining({ phase: 'cancelled', reason: 'Cancelled', message: 'by hand' }) }) }]);
    const withPod = run(observed([running], { record: record({}, timeouts(), { cancelRequested: 'by hand' }) }), now);
    expect(types(withPod)).toEqual(['writeRecord', 'publish']);
    const after = run(observed([running], { record: record({ state: 'finished', status: ended(withPod) }), delivery: 'pending' }), now);
    expect(types(after)).toEqual(['releasePod', 'publish']);
  });

  it('times a task out that waited in the queue past its bound, from submit or from the retry backoff\'s end', () => {
    const t = timeouts({ queue: 10_000 });
    expect(run(observed([], { record: record({}, t), admitted: false }), T0 + 5000).wakeAt).toBe(T0 + 10_000);
    expect(written(run(observed([], { record: record({}, t), admitted: false }), T0 + 10_000))).toMatchObject({ meaning: 'queueTimeout', body: { state: 'finished', status: { phase: 'timed-out', reason: 'QueueTimeout' } } });
    expect(run(observed([], { record: record({ retryAt: T0 + 20_000 }, t), admitted: false }), T0 + 25_000).wakeAt).toBe(T0 + 30_000);
  });

  it('writes the next attempt when the snapshotted retry policy retries the end, with the outcome kept and the backoff from now', () => {
    const retry: RetryPolicy = { maxAttempts: 3, backoffMs: 1000, retryOn: { reasons: ['EvictedByKubelet'] } };
    const d = run(observed([pod({ phase: 'Failed', reason: 'Evicted', message: 'low memory' })], { record: record({ retry }) }), now);
    expect(written(d)).toMatchObject({ meaning: 'retry', body: { state: 'queued', task: { attempt: 2 }, retryAt: now + 1000, previousAttempts: [{ attempt: 1, podName: 'rollcall-t1-1', phase: 'lost', reason: 'EvictedByKubelet' }] } });
    expect(written(d)!.body).not.toHaveProperty('status');
    expect(ofType(d, 'releasePod')).toEqual([]);
    // the last attempt ends the task
    const third = record({ retry, task: { taskId: 't1', taskType: 'report', tags: {}, attempt: 3, timeouts: timeouts() }, previousAttempts: [{ attempt: 1, podName: 'a', phase: 'lost' }, { attempt: 2, podName: 'b', phase: 'lost' }] });
    expect(written(run(observed([pod({ phase: 'Failed', reason: 'Evicted' }, { name: 'rollcall-t1-3' })], { record: third }), now))).toMatchObject({ meaning: 'end', body: { state: 'finished' } });
  });

  it('settles at once an expectation of an attempt the record has ended or moved past', () => {
    const expecting = { podName: 'rollcall-t1-1', attempt: 1, since: now };
    expect(types(run(observed([], { expecting, record: record({ state: 'finished', status: status({ phase: 'cancelled' }) }), delivery: 'pending' }), now))).toEqual(['resolveCreate', 'publish']);
    expect(types(run(observed([], { expecting, admitted: false, record: record({ task: { taskId: 't1', taskType: 'report', attempt: 2 } }) }), now))).toEqual(['resolveCreate', 'publish']);
  });

  it('waits, deciding nothing, while its own last record write is not in the cache yet', () => {
    const d = run(observed([], { writeUnseen: true, memo: { status: status() } }), now);
    expect(d).toEqual({ actions: [], memo: { status: status() } });
  });

  it('a pod seen live this term and gone without an end is lost', () => {
    expect(ended(run(observed([], { memo: { status: status({ phase: 'running' }) } }), now))).toMatchObject({ phase: 'lost', reason: 'Deleted' });
  });
});

describe('decide: delivery, acknowledgement, retention', () => {
  const finished = (change = {}) => record({ state: 'finished', status: status({ phase: 'failed', finishedAt: at(1000) }), ...change });

  it('delivers a finished status until acknowledged, then writes the ack', () => {
    expect(types(run(observed([], { record: finished() }), now))).toEqual(['deliver', 'publish']);
    expect(types(run(observed([], { record: finished(), delivery: 'pending' }), now))).toEqual(['publish']);
    expect(written(run(observed([], { record: finished(), delivery: 'acked' }), now))).toMatchObject({ meaning: 'ack', body: { state: 'done', ackedAt: now } });
  });

  it('keeps a failed pod keepFailedPodsMs after its end, then deletes it', () => {
    const released = pod({ phase: 'Failed' }, { finalizers: [], annotations: { [WRITE_TERM_ANNOTATION]: '1' } });
    const settings = { keepFailedPodsMs: 10_000, retainDoneMs: 86_400_000, expectationTtlMs: 30_000 };
    expect(run(observed([released], { record: finished(), delivery: 'pending' }), T0 + 5000, settings)).toMatchObject({ wakeAt: T0 + 11_000 });
    expect(types(run(observed([released], { record: finished(), delivery: 'pending' }), T0 + 11_000, settings))).toEqual(['deletePod', 'publish']);
  });

  it('deletes a done record past retention once its pods are gone, re-stamped first when another term wrote it', () => {
    const done = (writeTerm: number) => record({ state: 'done', status: status({ phase: 'succeeded' }), ackedAt: T0 }, timeouts(), { writeTerm });
    expect(run(observed([], { record: done(1) }), T0 + 1000).wakeAt).toBe(T0 + 86_400_000);
    expect(types(run(observed([], { record: done(1) }), T0 + 86_400_000))).toEqual(['deleteRecord', 'publish']);
    expect(written(run(observed([], { record: done(0) }), T0 + 86_400_000))).toMatchObject({ meaning: 'restamp' });
    expect(types(run(observed([pod({ phase: 'Succeeded' }, { finalizers: [FINALIZER] })], { record: done(1) }), T0 + 86_400_000))).toEqual(['releasePod', 'publish']);
  });

  it('retention is by age alone (from record-retention.test.ts): not a millisecond early, and never for a queued or finished record however old', () => {
    const done = record({ state: 'done', status: status({ phase: 'succeeded' }), ackedAt: T0 }, timeouts(), { writeTerm: 1 });
    const early = run(observed([], { record: done }), T0 + 86_400_000 - 1);
    expect(ofType(early, 'deleteRecord')).toEqual([]);
    expect(early.wakeAt).toBe(T0 + 86_400_000);
    const later = T0 + 10 * 86_400_000;
    expect(ofType(run(observed([], { record: finished(), delivery: 'pending' }), later), 'deleteRecord')).toEqual([]);
    expect(ofType(run(observed([], { record: record({}, timeouts(), { writeTerm: 1 }), admitted: false }), later), 'deleteRecord')).toEqual([]);
  });

  it('a requested next attempt over an ended task queues it again, the requests cleared', () => {
    const d = run(observed([], { record: finished({}), delivery: 'acked' }), now);
    expect(written(d)?.meaning).toBe('ack');
    const again = run(observed([], { record: { ...finished(), submitRequested: { taskId: 't1', taskType: 'report', attempt: 2 } } }), now);
    expect(written(again)).toMatchObject({ meaning: 'resubmit', clearRequests: true, body: { state: 'queued', task: { attempt: 2 }, retryAt: now } });
    expect(written(again)!.body).not.toHaveProperty('status');
  });
});
