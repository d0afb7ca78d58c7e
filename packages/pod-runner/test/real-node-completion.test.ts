import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { onRealNode, serverWait, waitForPod } from '@rollcall/tools/testenv';
import type { PodRunner, PodTemplateSpec, TaskStatus } from '../src/index.js';
import { admin, runnerNamespace, startRunner } from './runner-env.js';

/** Completion, failure and retries as the kubelet reports them: processes that really run, exit, run out of memory and pass their deadline. */
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;
const reports: TaskStatus[] = [];

const spec = (s: Record<string, unknown>) => onRealNode(s as never) as PodTemplateSpec['spec'];
/** A process that runs until killed: it exits on SIGTERM (as PID 1 it needs a handler to), or ignores it when asked (a sidecar that lingers). */
const forever = (ignoreTerm = false) => ['node', '-e', `process.on('SIGTERM', () => ${ignoreTerm ? '{}' : 'process.exit(143)'}); setInterval(() => {}, 1000);`];

beforeAll(async () => {
  env = await runnerNamespace('rn-completion');
  runner = await startRunner(env, {
    onStatus: (s) => reports.push(s),
    templates: [
      // the kubelet's own deadline, set by the template (no run timeout of the runner's to race it)
      { name: 'deadline', taskTypes: ['deadline'], template: { spec: spec({ activeDeadlineSeconds: 2, containers: [{ name: 'main' }] }) } },
      { name: 'missing-image', taskTypes: ['missing-image'], template: { spec: spec({ containers: [{ name: 'main', image: 'registry.invalid/rollcall/missing:1', imagePullPolicy: 'Always' }] }) } },
      {
        // a plain sidecar listed before the task container, and a native one (an init container that always restarts)
        name: 'sidecars',
        taskTypes: ['sidecars'],
        container: 'main',
        template: {
          spec: spec({
            terminationGracePeriodSeconds: 5,
            initContainers: [{ name: 'native', restartPolicy: 'Always', command: forever() }],
            containers: [{ name: 'proxy', command: forever(true) }, { name: 'main' }],
          }),
        },
      },
      { name: 'init-fails', taskTypes: ['init-fails'], template: { spec: spec({ initContainers: [{ name: 'setup', command: ['node', '-e', "console.error('no config'); process.exit(2)"] }], containers: [{ name: 'main' }] }) } },
      { name: 'retried', taskTypes: ['retried'], retry: { maxAttempts: 3, backoffMs: 100, retryOn: { exitCodes: { operator: 'In', values: [75] } } }, template: { spec: spec({ containers: [{ name: 'main' }] }) } },
      { name: 'real', template: { spec: spec({ containers: [{ name: 'main' }] }) } },
    ],
  });
});

afterAll(async () => {
  await runner?.close();
});

const gone = (podName: string) => waitFor(() => admin.core.readNamespacedPod({ name: podName, namespace: env.namespace }).then(() => false, () => true), 60_000, serverWait({ what: `pod ${podName} deleted` }));
const phasesOf = (taskId: string) => reports.filter((r) => r.taskId === taskId).map((r) => r.phase);

describe('exit codes and the kubelet\'s reasons', () => {
  it('succeeds on exit 0 and fails with the process\'s exit code otherwise', async () => {
    await runner.submit({ taskId: 'exit-0', taskType: 'exit', command: ['node', '-e', 'process.exit(0)'] });
    await runner.submit({ taskId: 'exit-42', taskType: 'exit', command: ['node', '-e', 'process.exit(42)'] });
    expect(await runner.result('exit-0')).toMatchObject({ phase: 'succeeded', reason: 'Completed', exitCode: 0 });
    expect(await runner.result('exit-42')).toMatchObject({ phase: 'failed', reason: 'Error', exitCode: 42 });
  });

  it('reads OOMKilled under a memory limit', async () => {
    const hog = 'const kept = []; setInterval(() => { for (let i = 0; i < 8; i++) kept.push(Buffer.alloc(1 << 20, 1)); }, 10);';
    await runner.submit({ taskId: 'oom', taskType: 'oom', command: ['node', '-e', hog], resources: { requests: { memory: '96Mi' }, limits: { memory: '96Mi' } } });
    expect(await runner.result('oom')).toMatchObject({ phase: 'failed', reason: 'OOMKilled', exitCode: 137 });
  });

  it('reads the kubelet\'s activeDeadlineSeconds as DeadlineExceeded, apart from the runner\'s RunTimeout', async () => {
    await runner.submit({ taskId: 'deadline', taskType: 'deadline', command: forever() });
    expect(await runner.result('deadline')).toMatchObject({ phase: 'timed-out', reason: 'DeadlineExceeded' });
  });

  it('names a failed init container apart from the task container\'s exit', async () => {
    await runner.submit({ taskId: 'init-fails', taskType: 'init-fails', command: ['node', '-e', 'process.exit(0)'] });
    const status = await runner.result('init-fails');
    expect(status).toMatchObject({ phase: 'failed', reason: 'InitContainerFailed', message: expect.stringMatching(/^init container setup exited with 2 \(Error\)/) });
    expect(status.exitCode).toBeUndefined();
  });
});

describe('pods that do not end by themselves', () => {
  it('reports a running pod deleted out of band as lost, never succeeded, though its process exits 0 on SIGTERM', async () => {
    const script = "process.on('SIGTERM', () => process.exit(0)); console.log('up'); setInterval(() => {}, 1000);";
    const { podName } = await runner.submit({ taskId: 'deleted', taskType: 'deleted', command: ['node', '-e', script] });
    for await (const status of runner.events('deleted')) if (status.phase === 'running') break;
    await admin.core.deleteNamespacedPod({ name: podName, namespace: env.namespace });
    expect(await runner.result('deleted')).toMatchObject({ phase: 'lost', reason: 'Deleted' });
    await gone(podName);
    expect(phasesOf('deleted')).not.toContain('succeeded');
  });

  it('holds a missing image as the image-pull cause and fails it at the start timeout', async () => {
    await runner.submit({ taskId: 'missing-image', taskType: 'missing-image', timeouts: { start: 8000, imagePull: 600_000 } });
    const status = await runner.result('missing-image');
    expect(status).toMatchObject({ phase: 'timed-out', message: expect.stringMatching(/^pending \(image-pull\) past its timeout/) });
    expect(['ErrImagePull', 'ImagePullBackOff']).toContain(status.reason);
    expect(reports.some((r) => r.taskId === 'missing-image' && r.pendingCause === 'image-pull')).toBe(true);
  });

  it('finishes a task whose container exits while its sidecars keep running, then deletes the pod', async () => {
    const { podName } = await runner.submit({ taskId: 'sidecars', taskType: 'sidecars', command: ['node', '-e', "setTimeout(() => process.exit(0), 500)"] });
    expect(await runner.result('sidecars')).toMatchObject({ phase: 'succeeded', exitCode: 0 });
    // the runner's delete, with the plain sidecar still running (it ignores SIGTERM for its 5 s grace)
    const pod = await waitForPod(admin.core, env.namespace, podName, 'deleted by the runner', (p) => p.metadata?.deletionTimestamp !== undefined, 30_000);
    expect(pod.status?.containerStatuses?.find((c) => c.name === 'main')?.state?.terminated?.exitCode).toBe(0);
    expect(pod.status?.containerStatuses?.find((c) => c.name === 'proxy')?.state?.running).toBeDefined();
    expect(pod.status?.initContainerStatuses?.find((c) => c.name === 'native')?.state).toBeDefined();
    await gone(podName);
  });
});

describe('a retry policy', () => {
  it('retries a chosen exit code as a new attempt with a new pod, the attempt in the status', async () => {
    // attempt 1 exits 75 (retried), attempt 2 exits 0; the pod's name ends with its attempt
    const script = "process.exit(require('os').hostname().endsWith('-1') ? 75 : 0)";
    const first = await runner.submit({ taskId: 'retried', taskType: 'retried', command: ['node', '-e', script] });
    const final = await runner.result('retried');
    expect(final).toMatchObject({ phase: 'succeeded', attempt: 2, exitCode: 0, previousAttempts: [{ attempt: 1, podName: first.podName, phase: 'failed', reason: 'Error', exitCode: 75 }] });
    expect(final.podName).not.toBe(first.podName);
    expect(reports.some((r) => r.taskId === 'retried' && r.phase === 'queued' && r.reason === 'RetryBackoff' && r.attempt === 2)).toBe(true);
    await gone(first.podName);
  });
});
