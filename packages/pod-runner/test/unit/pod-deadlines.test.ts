import { describe, expect, it } from 'vitest';

// reconcile.test.ts's table, read through pod-deadlines.ts' readAttemptPod (its successor); the cases of a cancel mark,
// an ended task's pod and another attempt's pod are decide's now (decide.test.ts).
import { pendingTimedOut, runTimedOut } from '../../src/pod-deadlines.js';
import { at, pod, podDecision, status, T0, timeouts } from './fixtures.js';

const now = new Date(T0 + 60_000);
const task = (change = {}, t = timeouts()) => ({ status: status(change), timeouts: t });

describe('reading the current attempt\'s pod: a pending pod, each cause with its own bound', () => {
  it('bounds a pod not yet scheduled by the start timeout from its creation', () => {
    expect(podDecision(task(), pod({ phase: 'Pending' }), now)).toEqual({
      action: 'wait',
      change: { phase: 'pending', pendingCause: 'scheduling', reason: undefined, message: undefined },
      pendingDeadline: { cause: 'scheduling', deadline: T0 + 600_000 },
    });
  });

  it('bounds an unschedulable pod by the earlier of its own timeout (from the condition) and the start timeout', () => {
    const unschedulable = pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes', lastTransitionTime: at(10_000) }] });
    expect(podDecision(task(), unschedulable, now)).toMatchObject({ action: 'wait', change: { pendingCause: 'unschedulable', reason: 'Unschedulable', message: '0/1 nodes' }, pendingDeadline: { cause: 'unschedulable', deadline: T0 + 310_000 } });
    expect(podDecision(task({}, timeouts({ start: 100_000 })), unschedulable, now)).toMatchObject({ pendingDeadline: { deadline: T0 + 100_000 } });
  });

  it('counts an image pull from the kubelet\'s start of the pod', () => {
    const pulling = pod({ phase: 'Pending', startTime: at(20_000), conditions: [{ type: 'PodScheduled', status: 'True' }], containerStatuses: [{ name: 'main', state: { waiting: { reason: 'ImagePullBackOff' } } }] });
    expect(podDecision(task({}, timeouts({ imagePull: 1500 })), pulling, now)).toMatchObject({ action: 'wait', change: { pendingCause: 'image-pull', reason: 'ImagePullBackOff' }, pendingDeadline: { cause: 'image-pull', deadline: T0 + 21_500 } });
  });

  it('bounds a container-config error by the start timeout only', () => {
    const config = pod({ phase: 'Pending', startTime: at(5000), containerStatuses: [{ name: 'main', state: { waiting: { reason: 'CreateContainerConfigError' } } }] });
    expect(podDecision(task({}, timeouts({ start: 1500 })), config, now)).toMatchObject({ change: { pendingCause: 'container-config' }, pendingDeadline: { cause: 'container-config', deadline: T0 + 1500 } });
  });

  it('arms no timer when no bound applies', () => {
    expect(podDecision(task({}, { unschedulable: 1 }), pod({ phase: 'Pending' }), now)).toEqual({
      action: 'wait',
      change: { phase: 'pending', pendingCause: 'scheduling', reason: undefined, message: undefined },
      pendingDeadline: undefined,
    });
  });

  it('fails at once on InvalidImageName, which no wait cures', () => {
    const invalid = pod({ phase: 'Pending', containerStatuses: [{ name: 'main', state: { waiting: { reason: 'InvalidImageName', message: 'bad' } } }] });
    expect(podDecision(task(), invalid, now)).toEqual({ action: 'finish', change: { phase: 'failed', reason: 'InvalidImageName', message: 'bad' } });
  });
});

describe('reading the current attempt\'s pod: running and ended', () => {
  const running = pod({ phase: 'Running', containerStatuses: [{ name: 'main', state: { running: { startedAt: at(30_000) } } }] });

  it('runs, clearing the pending cause, with the run timeout counted from the container\'s start', () => {
    expect(podDecision(task({ pendingCause: 'starting', reason: 'x' }, timeouts({ run: 1500 })), running, now)).toEqual({
      action: 'run',
      change: { phase: 'running', pendingCause: undefined, reason: undefined, message: undefined, startedAt: at(30_000) },
      runDeadline: T0 + 31_500,
    });
    expect(podDecision(task(), running, now)).toMatchObject({ action: 'run', runDeadline: undefined });
  });

  it('reads success with the exit code and the JSON result', () => {
    const done = pod({ phase: 'Succeeded', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 0, reason: 'Completed', message: '{"rows":12}', startedAt: at(1), finishedAt: at(2) } } }] });
    expect(podDecision(task(), done, now)).toMatchObject({ action: 'finish', change: { phase: 'succeeded', reason: 'Completed', exitCode: 0, result: { rows: 12 }, finishedAt: at(2) } });
  });

  it('takes a missing finish time from the wall clock it is given, and nothing else', () => {
    const done = pod({ phase: 'Failed', containerStatuses: [{ name: 'main', state: { terminated: { exitCode: 3 } } }] });
    expect(podDecision(task(), done, now)).toMatchObject({ action: 'finish', change: { phase: 'failed', reason: 'Error', exitCode: 3, finishedAt: now.toISOString() } });
  });

  it('reads an eviction as lost, never as a failure of the task', () => {
    expect(podDecision(task(), pod({ phase: 'Failed', reason: 'Evicted', message: 'low memory' }), now)).toMatchObject({ action: 'finish', change: { phase: 'lost', reason: 'EvictedByKubelet', message: 'low memory' } });
  });

  it('reads a pod being deleted before it finished as lost', () => {
    expect(podDecision(task({ phase: 'running' }), pod(running.status, { deletionTimestamp: at(40_000) }), now)).toEqual({
      action: 'finish',
      change: { phase: 'lost', reason: 'Deleted', message: 'pod rollcall-t1-1 was deleted before it finished' },
    });
  });
});

describe('the timeouts\' statuses', () => {
  it('keeps the pending reason and message, with the pod\'s events', () => {
    expect(pendingTimedOut(status({ reason: 'ImagePullBackOff', message: 'no such image' }), 'image-pull', ['Failed: pull'])).toEqual({
      phase: 'timed-out',
      reason: 'ImagePullBackOff',
      message: 'pending (image-pull) past its timeout: no such image',
      podEvents: ['Failed: pull'],
    });
    expect(pendingTimedOut(status(), 'unschedulable', [])).toMatchObject({ reason: 'Unschedulable', message: 'pending (unschedulable) past its timeout' });
    expect(pendingTimedOut(status(), 'starting', [])).toMatchObject({ reason: 'PendingTimeout' });
  });

  it("names the runner's run timeout apart from the kubelet's DeadlineExceeded", () => {
    expect(runTimedOut({ run: 1500 })).toEqual({ phase: 'timed-out', reason: 'RunTimeout', message: 'ran longer than its run timeout of 1500 ms' });
  });
});
