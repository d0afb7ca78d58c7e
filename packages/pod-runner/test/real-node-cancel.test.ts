import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Watch, type V1ContainerStateTerminated, type V1Pod } from '@kubernetes/client-node';
import { onRealNode } from '@rollcall/tools/testenv';
import type { LogLine, PodRunner, PodTemplateSpec, TaskStatus } from '../src/index.js';
import { admin, runnerNamespace, startRunner } from './runner-env.js';

/** Cancel on the real node: the kubelet's SIGTERM, and its SIGKILL once the pod's grace period has passed. */
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;
const reports: TaskStatus[] = [];

const spec = (s: Record<string, unknown>) => onRealNode(s as never) as PodTemplateSpec['spec'];

beforeAll(async () => {
  env = await runnerNamespace('rn-cancel');
  runner = await startRunner(env, {
    onStatus: (s) => reports.push(s),
    templates: [
      { name: 'short-grace', taskTypes: ['short-grace'], template: { spec: spec({ terminationGracePeriodSeconds: 3, containers: [{ name: 'main' }] }) } },
      // the kubelet's default grace, 30 s: longer than any of these tests waits
      { name: 'real', template: { spec: spec({ containers: [{ name: 'main' }] }) } },
    ],
  });
});

afterAll(async () => {
  await runner?.close();
});

/**
 * Every version of one pod the API server sends, to its deletion: the task
 * container's last state is on the pod only in the moment before the kubelet
 * removes it, which a re-read can miss.
 */
function watchPod(name: string): { graceAsked: () => number | undefined; deleted: Promise<V1Pod>; stop: () => void } {
  let graceAsked: number | undefined;
  let abort: AbortController | undefined;
  let stopped = false;
  const deleted = new Promise<V1Pod>((resolve, reject) => {
    void new Watch(admin.kc)
      .watch(
        `/api/v1/namespaces/${env.namespace}/pods`,
        { fieldSelector: `metadata.name=${name}` },
        (type: string, pod: V1Pod) => {
          // the first version being deleted carries the grace asked; the kubelet's final delete has 0
          if (graceAsked === undefined && pod.metadata?.deletionTimestamp) graceAsked = pod.metadata.deletionGracePeriodSeconds;
          if (type === 'DELETED') resolve(pod);
        },
        (error: unknown) => stopped || reject(new Error(`the watch of pod ${name} ended before its deletion`, { cause: error })),
      )
      .then((a) => (stopped ? a.abort() : (abort = a)), reject);
  });
  return { graceAsked: () => graceAsked, deleted, stop: () => ((stopped = true), abort?.abort()) };
}

const terminatedOf = (pod: V1Pod): V1ContainerStateTerminated | undefined => pod.status?.containerStatuses?.find((c) => c.name === 'main')?.state?.terminated;
const reportsOf = (taskId: string) => reports.filter((r) => r.taskId === taskId);

/** Submits a task and waits until its process runs and has printed `ready`, so its SIGTERM handler is in place. */
async function runningTask(taskId: string, taskType: string, script: string): Promise<{ podName: string; watch: ReturnType<typeof watchPod>; log: AsyncIterator<LogLine> }> {
  const { podName } = await runner.submit({ taskId, taskType, command: ['node', '-e', script] });
  const watch = watchPod(podName);
  for await (const status of runner.events(taskId)) if (status.phase === 'running') break;
  const log = runner.logs(taskId, { follow: true })[Symbol.asyncIterator]();
  const first = await log.next();
  expect(first.value?.text).toBe('ready');
  return { podName, watch, log };
}

/** The rest of a followed log, to its end (the container's exit). */
async function rest(log: AsyncIterator<LogLine>): Promise<string[]> {
  const lines: string[] = [];
  for (let next = await log.next(); !next.done; next = await log.next()) lines.push(next.value.text);
  return lines;
}

/** A process that logs its SIGTERM, then goes on ticking every 20 ms (its own clock, ms) until it is killed: the time from one to the last is the grace it got. */
const IGNORES_TERM = [
  "console.log('ready');",
  "process.on('SIGTERM', () => { console.log(`term ${Date.now()}`); setInterval(() => console.log(`tick ${Date.now()}`), 20); });",
  'setInterval(() => {}, 1000);',
].join('\n');

/** Seconds from the logged SIGTERM to the last tick before the kill. */
function graceUsed(lines: string[]): number {
  const term = lines.find((l) => l.startsWith('term '));
  const ticks = lines.filter((l) => l.startsWith('tick '));
  expect(term, `a logged SIGTERM in ${JSON.stringify(lines.slice(0, 5))}`).toBeDefined();
  expect(ticks.length).toBeGreaterThan(0);
  return (Number(ticks.at(-1)!.slice(5)) - Number(term!.slice(5))) / 1000;
}

describe('cancel of a running task on the real node', () => {
  it('sends the process SIGTERM: its handler writes the termination message and exits 0, and the task is cancelled once, never succeeded', async () => {
    const script = [
      "console.log('ready');",
      "process.on('SIGTERM', () => { console.log('got SIGTERM'); require('fs').writeFileSync('/dev/termination-log', 'stopped on SIGTERM'); process.exit(0); });",
      'setInterval(() => {}, 1000);',
    ].join('\n');
    const { watch, log } = await runningTask('cancel-term', 'term', script);
    const cancelled = await runner.cancel('cancel-term', { reason: 'user asked' });
    expect(cancelled).toMatchObject({ phase: 'cancelled', reason: 'Cancelled', message: 'user asked' });
    expect(await rest(log)).toEqual(['got SIGTERM']);
    const last = await watch.deleted;
    watch.stop();
    // the handler's exit (0, its message), not the kubelet's SIGKILL (137) after 30 s
    expect(terminatedOf(last)).toMatchObject({ exitCode: 0, message: 'stopped on SIGTERM' });
    expect(watch.graceAsked()).toBe(30);
    // a task created after the deletion ends after it on the one watch: the runner has seen the pod go by then
    await runner.submit({ taskId: 'after-term', taskType: 'term', command: ['node', '-e', '0'] });
    await runner.result('after-term');
    const terminal = reportsOf('cancel-term').filter((r) => ['succeeded', 'failed', 'timed-out', 'cancelled', 'lost'].includes(r.phase));
    expect(terminal).toHaveLength(1);
    expect(terminal[0]).toMatchObject({ phase: 'cancelled', reason: 'Cancelled', message: 'user asked' });
    expect(await runner.result('cancel-term')).toMatchObject({ phase: 'cancelled', reason: 'Cancelled' });
  });

  it('kills a process that ignores SIGTERM once the template\'s terminationGracePeriodSeconds (3) has passed', async () => {
    const { watch, log } = await runningTask('cancel-ignored', 'short-grace', IGNORES_TERM);
    await runner.cancel('cancel-ignored');
    const lines = await rest(log);
    const last = await watch.deleted;
    watch.stop();
    expect(terminatedOf(last)).toMatchObject({ exitCode: 137 });
    expect(watch.graceAsked()).toBe(3);
    const used = graceUsed(lines);
    console.log(`[real-node-cancel] SIGTERM → last tick: ${used.toFixed(2)} s of a 3 s grace`);
    // ticks every 20 ms until the kill; half a second of slack for a starved container, still apart from the kubelet's 2 s minimum
    expect(used).toBeGreaterThanOrEqual(2.5);
    expect(reportsOf('cancel-ignored').filter((r) => r.phase === 'cancelled')).toHaveLength(1);
    expect(reportsOf('cancel-ignored').some((r) => r.phase === 'succeeded' || r.phase === 'failed' || r.phase === 'lost')).toBe(false);
  });

  it('kills it after the grace the cancel gives (1 s, which the kubelet raises to its 2 s minimum), not the pod\'s own 30 s; a grace that is not a whole number of seconds is refused and changes nothing', async () => {
    const { podName, watch, log } = await runningTask('cancel-graced', 'graced', IGNORES_TERM);
    for (const graceSeconds of [1.5, -1]) await expect(runner.cancel('cancel-graced', { graceSeconds })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(runner.get('cancel-graced')).toMatchObject({ phase: 'running' });
    expect((await admin.core.readNamespacedPod({ name: podName, namespace: env.namespace })).metadata?.deletionTimestamp).toBeUndefined();
    const started = performance.now();
    await runner.cancel('cancel-graced', { graceSeconds: 1 });
    const lines = await rest(log);
    const last = await watch.deleted;
    const gone = (performance.now() - started) / 1000;
    watch.stop();
    expect(terminatedOf(last)).toMatchObject({ exitCode: 137 });
    expect(watch.graceAsked()).toBe(1);
    const used = graceUsed(lines);
    console.log(`[real-node-cancel] SIGTERM → last tick: ${used.toFixed(2)} s of a 1 s grace; cancel → pod gone ${gone.toFixed(1)} s`);
    // the kubelet gives every container at least 2 s (minimumGracePeriodInSeconds), though 1 s was asked
    expect(used).toBeGreaterThanOrEqual(1.5);
    // the pod's own 30 s were not waited
    expect(gone).toBeLessThan(30);
    expect(reportsOf('cancel-graced').filter((r) => r.phase === 'cancelled')).toHaveLength(1);
    expect(reportsOf('cancel-graced').some((r) => r.phase === 'succeeded' || r.phase === 'failed' || r.phase === 'lost')).toBe(false);
  });
});
