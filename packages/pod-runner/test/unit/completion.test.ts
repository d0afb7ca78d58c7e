import { describe, expect, it } from 'vitest';
import { TASK_CONTAINER_ANNOTATION } from '../../src/pod.js';
import { statusFromPod } from '../../src/pod-task.js';
import { TASK_ANNOTATION } from '../../src/pod.js';
import { unknownTimedOut } from '../../src/pod-deadlines.js';
import { at, pod, podDecision, status, T0, timeouts } from './fixtures.js';

const now = new Date(T0 + 60_000);
const task = (change = {}, t = timeouts()) => ({ status: status(change), timeouts: t });

/** A pod whose spec lists a plain sidecar before the task container `main`, as its annotation says. */
function withSidecar(podStatus: Parameters<typeof pod>[0], metadata: Parameters<typeof pod>[1] = {}) {
  const p = pod(podStatus, { annotations: { [TASK_CONTAINER_ANNOTATION]: 'main' }, ...metadata });
  p.spec = { containers: [{ name: 'proxy' }, { name: 'main' }], initContainers: [{ name: 'mesh', restartPolicy: 'Always' }, { name: 'setup' }] };
  return p;
}

describe('reconcile: the task container decides, found by name', () => {
  it('ends the task when its container exits though a sidecar listed first still runs', () => {
    const p = withSidecar({
      phase: 'Running',
      containerStatuses: [
        { name: 'proxy', state: { running: { startedAt: at(1000) } } },
        { name: 'main', state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: at(1000), finishedAt: at(5000) } } },
      ],
    });
    expect(podDecision(task({ phase: 'running' }), p, now)).toMatchObject({ action: 'finish', change: { phase: 'succeeded', reason: 'Completed', exitCode: 0, finishedAt: at(5000) } });
  });

  it('fails with the exit code of the task container, not the first one', () => {
    const p = withSidecar({
      phase: 'Running',
      containerStatuses: [
        { name: 'proxy', state: { running: {} } },
        { name: 'main', state: { terminated: { exitCode: 7, reason: 'Error' } } },
      ],
    });
    expect(podDecision(task(), p, now)).toMatchObject({ action: 'finish', change: { phase: 'failed', reason: 'Error', exitCode: 7 } });
  });

  it('runs only once the task container runs, not when a sidecar does', () => {
    const p = withSidecar({ phase: 'Running', startTime: at(500), containerStatuses: [{ name: 'proxy', state: { running: { startedAt: at(1000) } } }, { name: 'main', state: { waiting: { reason: 'ImagePullBackOff', message: 'no image' } } }] });
    expect(podDecision(task(), p, now)).toMatchObject({ action: 'wait', change: { pendingCause: 'image-pull', reason: 'ImagePullBackOff' } });
    const running = withSidecar({ phase: 'Running', containerStatuses: [{ name: 'proxy', state: { running: { startedAt: at(1000) } } }, { name: 'main', state: { running: { startedAt: at(2000) } } }] });
    expect(podDecision(task(), running, now)).toMatchObject({ action: 'run', change: { startedAt: at(2000) } });
  });

  it('reads OOMKilled as its own reason', () => {
    const p = pod({ phase: 'Failed', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }] });
    expect(podDecision(task(), p, now)).toMatchObject({ action: 'finish', change: { phase: 'failed', reason: 'OOMKilled', exitCode: 137 } });
  });

  it("reads the kubelet's DeadlineExceeded before the killed container's exit", () => {
    const p = pod({ phase: 'Failed', reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 137, reason: 'Error' } } }] });
    expect(podDecision(task(), p, now)).toMatchObject({ action: 'finish', change: { phase: 'timed-out', reason: 'DeadlineExceeded', exitCode: 137 } });
  });

  it('names a failed init container with its own reason; a native sidecar is not one', () => {
    const p = withSidecar({
      phase: 'Failed',
      initContainerStatuses: [
        { name: 'mesh', state: { terminated: { exitCode: 1, reason: 'Error' } } },
        { name: 'setup', state: { terminated: { exitCode: 2, reason: 'Error', message: 'no config' } } },
      ],
      containerStatuses: [{ name: 'main', state: { waiting: { reason: 'PodInitializing' } } }],
    });
    expect(podDecision(task(), p, now)).toEqual({ action: 'finish', change: expect.objectContaining({ phase: 'failed', reason: 'InitContainerFailed', message: 'init container setup exited with 2 (Error): no config' }) });
    expect((podDecision(task(), p, now) as { change: { exitCode?: number } }).change.exitCode).toBeUndefined();
  });

  it('holds a task whose init container waits on its image under image-pull, and one whose init containers run under initializing', () => {
    const pulling = withSidecar({ phase: 'Pending', startTime: at(2000), initContainerStatuses: [{ name: 'mesh', state: { waiting: { reason: 'ErrImagePull' } } }] });
    expect(podDecision(task(), pulling, now)).toMatchObject({ action: 'wait', change: { pendingCause: 'image-pull', reason: 'ErrImagePull' }, pendingDeadline: { cause: 'image-pull', deadline: T0 + 302_000 } });
    const initializing = withSidecar({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Initialized', status: 'False' }], initContainerStatuses: [{ name: 'setup', state: { running: {} } }] });
    expect(podDecision(task(), initializing, now)).toMatchObject({ action: 'wait', change: { pendingCause: 'initializing' }, pendingDeadline: { cause: 'initializing', deadline: T0 + 600_000 } });
  });
});

describe('reconcile: phase Unknown is its own state', () => {
  it('is unknown, bounded by the unknown timeout (default 300000 ms) from when it is seen, never pending', () => {
    const p = pod({ phase: 'Unknown', reason: 'NodeLost', message: 'node n1 not responding' });
    expect(podDecision(task({ phase: 'running' }), p, now)).toEqual({
      action: 'unknown',
      change: { phase: 'unknown', pendingCause: undefined, reason: 'NodeLost', message: 'node n1 not responding' },
      unknownDeadline: now.getTime() + 300_000,
    });
    expect(podDecision(task({}, timeouts({ unknown: 5000 })), p, now)).toMatchObject({ action: 'unknown', unknownDeadline: now.getTime() + 5000 });
    expect(podDecision(task({}, { start: 1 }), p, now)).toMatchObject({ action: 'unknown', unknownDeadline: now.getTime() + 300_000 });
  });

  it('ends as lost with reason NodeLost when the bound passes', () => {
    expect(unknownTimedOut(status({ phase: 'unknown', message: 'node n1 not responding' }), timeouts({ unknown: 1000 }))).toEqual({ phase: 'lost', reason: 'NodeLost', message: "the pod's node stopped reporting for 1000 ms: node n1 not responding" });
  });
});

describe('reconcile: a pod deleted behind the runner', () => {
  const deleted = (exitCode: number, finishedAt: string, conditions: { type: string; status: string; reason?: string }[] = []) =>
    pod({ phase: exitCode === 0 ? 'Succeeded' : 'Failed', conditions, containerStatuses: [{ name: 'main', state: { terminated: { exitCode, finishedAt } } }] }, { deletionTimestamp: at(40_000), deletionGracePeriodSeconds: 30 });

  it('is lost, never succeeded, when the container exited 0 after the delete was asked for (its SIGTERM handler)', () => {
    // asked at 10 s (deletionTimestamp 40 s less the 30 s grace)
    expect(podDecision(task({ phase: 'running' }), deleted(0, at(11_000)), now)).toMatchObject({ action: 'finish', change: { phase: 'lost', reason: 'Deleted' } });
    expect(podDecision(task({ phase: 'running' }), deleted(0, at(10_000)), now)).toMatchObject({ action: 'finish', change: { phase: 'lost', reason: 'Deleted' } });
  });

  it('reads the same for a viewer (rollcall tasks) of a pod no runner recorded', () => {
    const p = deleted(0, at(11_000));
    p.metadata.annotations = { [TASK_ANNOTATION]: JSON.stringify({ taskId: 't1', taskType: 'report', tags: {}, attempt: 1, template: 'default', timeouts: {}, submittedAt: at(0) }) };
    expect(statusFromPod(p)).toMatchObject({ phase: 'lost', reason: 'Deleted' });
  });

  it('keeps an exit from before the delete', () => {
    expect(podDecision(task({ phase: 'running' }), deleted(0, at(9000)), now)).toMatchObject({ action: 'finish', change: { phase: 'succeeded' } });
  });

  it('names the disruption Kubernetes gives', () => {
    const cases = [
      ['EvictionByEvictionAPI', 'Evicted'],
      ['TerminationByKubelet', 'TerminatedByKubelet'], // no status.reason of the kubelet's to tell which (kubelet-endings.test.ts has them)
      ['PreemptionByScheduler', 'Preempted'],
      ['DeletionByTaintManager', 'TaintManagerEviction'],
      ['DeletionByPodGC', 'PodGarbageCollected'],
    ];
    for (const [condition, reason] of cases) {
      expect(podDecision(task({ phase: 'running' }), deleted(143, at(20_000), [{ type: 'DisruptionTarget', status: 'True', reason: condition }]), now)).toMatchObject({ action: 'finish', change: { phase: 'lost', reason } });
    }
  });
});
