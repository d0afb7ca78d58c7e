import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeFor, waitFor } from '@rollcall/conformance';
import { type PodRunner } from '../src/index.js';
import { admin, podTemplate, runnerNamespace, runnerPods, startRunner, waits } from './runner-env.js';

let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;

beforeAll(async () => {
  env = await runnerNamespace('pod-timeouts');
  runner = await startRunner(env, {
    templates: [
      { name: 'nowhere', taskTypes: ['nowhere'], template: podTemplate({ nodeSelector: { pool: 'none' } }) },
      { name: 'default', template: podTemplate() },
    ],
  });
});

afterAll(async () => {
  await runner?.close();
});

const gone = (podName: string) => waitFor(async () => (await runnerPods(env.namespace)).every((p) => p.metadata!.name !== podName), 15_000, `pod ${podName} to be deleted`);

describe('pending, classified, each cause with its own timer', () => {
  it('times out an unschedulable pod with the scheduler\'s reason and the pod\'s last events, and deletes it', async () => {
    const status = await runner.submit({ taskId: 'unschedulable', taskType: 'nowhere', timeouts: { unschedulable: 1500 } });
    await waitFor(() => runner.get('unschedulable')?.pendingCause === 'unschedulable', 15_000, 'the pending cause unschedulable');
    const ended = await runner.result('unschedulable');
    expect(ended).toMatchObject({ phase: 'timed-out', reason: 'Unschedulable' });
    expect(ended.message).toContain('unschedulable');
    expect(ended.podEvents?.some((e) => e.startsWith('FailedScheduling'))).toBe(true);
    await gone(status.podName);
  });

  it('times out a pod waiting on its image', async () => {
    const status = await runner.submit({ taskId: 'image-pull', taskType: 'report', timeouts: { imagePull: 1500 }, ...waits('ImagePullBackOff') });
    await waitFor(() => runner.get('image-pull')?.pendingCause === 'image-pull', 15_000, 'the pending cause image-pull');
    expect(await runner.result('image-pull')).toMatchObject({ phase: 'timed-out', reason: 'ImagePullBackOff' });
    await gone(status.podName);
  });

  it('fails at once on InvalidImageName, which no wait cures', async () => {
    const status = await runner.submit({ taskId: 'invalid-image', taskType: 'report', timeouts: { imagePull: 600_000, start: 600_000 }, ...waits('InvalidImageName') });
    expect(await runner.result('invalid-image')).toMatchObject({ phase: 'failed', reason: 'InvalidImageName' });
    await gone(status.podName);
  });

  it('bounds a container-config error by the start timeout', async () => {
    await runner.submit({ taskId: 'config-error', taskType: 'report', timeouts: { start: 1500 }, ...waits('CreateContainerConfigError') });
    await waitFor(() => runner.get('config-error')?.pendingCause === 'container-config', 15_000, 'the pending cause container-config');
    expect(await runner.result('config-error')).toMatchObject({ phase: 'timed-out', reason: 'CreateContainerConfigError' });
  });
});

describe('run time', () => {
  it('sets activeDeadlineSeconds and enforces the run timeout itself', async () => {
    const status = await runner.submit({ taskId: 'runs-long', taskType: 'report', timeouts: { run: 1500 } });
    const pod = await admin.core.readNamespacedPod({ namespace: env.namespace, name: status.podName });
    expect(pod.spec?.activeDeadlineSeconds).toBe(2);
    // kwok enforces no activeDeadlineSeconds: the runner's own timer ends it, under its own reason
    expect(await runner.result('runs-long')).toMatchObject({ phase: 'timed-out', reason: 'RunTimeout' });
    await gone(status.podName);
  });
});

describe('a runner that restarts', () => {
  it('resumes a pending timer from the pod\'s own timestamps, not from its own start', async () => {
    const first = await startRunner(env, { name: 'resume', templates: [{ name: 'nowhere', template: podTemplate({ nodeSelector: { pool: 'none' } }) }] });
    await first.submit({ taskId: 'resume-pending', taskType: 'report', timeouts: { unschedulable: 5000 } });
    await waitFor(() => first.get('resume-pending')?.pendingCause === 'unschedulable', 15_000, 'the pending cause unschedulable');
    await first.close();
    await observeFor(2500); // the runner is down for a while
    const restarted = Date.now();
    const second = await startRunner(env, { name: 'resume', templates: [{ name: 'nowhere', template: podTemplate({ nodeSelector: { pool: 'none' } }) }] });
    try {
      expect(second.get('resume-pending')?.pendingCause).toBe('unschedulable');
      expect(await second.result('resume-pending')).toMatchObject({ phase: 'timed-out', reason: 'Unschedulable' });
      expect(Date.now() - restarted).toBeLessThan(4000); // a timer started afresh would take 5000
      await waitFor(async () => (await runnerPods(env.namespace, 'resume')).length === 0, 15_000, 'the timed-out pod to be deleted');
    } finally {
      await second.close();
    }
  });
});
