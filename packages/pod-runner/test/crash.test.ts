import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendFileSync } from 'node:fs';
import { waitFor } from '@rollcall/conformance';
import { KWOK_LOG_CONTAINER, kwokContainerLogPath } from '@rollcall/tools/testenv';
import type { PodRunner, Task, TaskStatus } from '../src/index.js';
import { admin, exits, fixtureChild, podTemplate, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

let env: { namespace: string; kubeconfig: string };
const closing: PodRunner[] = [];
const templates = [
  { name: 'nowhere', taskTypes: ['nowhere'], template: podTemplate({ nodeSelector: { pool: 'none' } }) },
  { name: 'default', template: podTemplate() },
];

beforeAll(async () => {
  env = await runnerNamespace('pod-crash');
});

afterAll(async () => {
  for (const runner of closing) await runner.close();
});

/** A runner in a child process that submits `tasks`; its statuses as it printed them. */
function childRunner(name: string, tasks: Task[], given = templates) {
  const statuses: TaskStatus[] = [];
  const child = fixtureChild('runner-child.mjs', { ...env, name, templates: given, tasks }, (line) => {
    if (line.startsWith('{')) statuses.push(JSON.parse(line) as TaskStatus);
  });
  return { statuses, kill: async () => (child.signal('SIGKILL'), await child.exit), stderr: child.stderr };
}

const last = (statuses: TaskStatus[], id: string) => statuses.filter((s) => s.taskId === id).at(-1);

describe('a runner killed with SIGKILL', () => {
  it('while one task runs and one is pending: the next runner reports the run once, makes no second pod, and resumes the pending timer from the pod', async () => {
    const child = childRunner('crash', [
      { taskId: 'crash-running', taskType: 'report', ...exits(0, { runMs: 2500, message: '{"rows":3}' }) },
      { taskId: 'crash-pending', taskType: 'nowhere', timeouts: { unschedulable: 5000 } },
    ]);
    await waitFor(() => last(child.statuses, 'crash-running')?.phase === 'running' && last(child.statuses, 'crash-pending')?.pendingCause === 'unschedulable', 30_000, () => `the child to see one task running and one unschedulable (${child.stderr()})`);
    await child.kill();
    const pendingSince = Date.now();

    const reports: TaskStatus[] = [];
    const next = await startRunner(env, { name: 'crash', templates, onStatus: (s) => reports.push(s) });
    closing.push(next);
    expect(await next.result('crash-running')).toMatchObject({ phase: 'succeeded', exitCode: 0, result: { rows: 3 } });
    // the scheduler, restarted too, submits again: the same task, known from its pod, is not run twice
    expect((await next.submit({ taskId: 'crash-running', taskType: 'report', ...exits(0, { runMs: 2500, message: '{"rows":3}' }) })).phase).toBe('succeeded');
    expect(await next.result('crash-pending')).toMatchObject({ phase: 'timed-out', reason: 'Unschedulable' });
    expect(Date.now() - pendingSince).toBeLessThan(5000); // resumed from the pod's condition, not started afresh
    for (const id of ['crash-running', 'crash-pending']) expect(reports.filter((r) => r.taskId === id && ['succeeded', 'timed-out'].includes(r.phase))).toHaveLength(1);
    expect(child.statuses.some((s) => s.taskId === 'crash-running' && s.phase === 'succeeded')).toBe(false);
    await waitFor(async () => (await runnerPods(env.namespace, 'crash')).length === 0, 15_000, 'both pods to be deleted, and no other made');
    expect(next.list().map((s) => s.podName).sort()).toEqual(['crash-crash-pending-1', 'crash-crash-running-1']);
  });

  it('after SIGKILL, result() and logs() of an acknowledged task answer from its record', async () => {
    const logging = [{ name: 'logging', template: { spec: { containers: [{ name: KWOK_LOG_CONTAINER, image: 'logger:1' }] } } }];
    const child = childRunner('acked', [{ taskId: 'acked-task', taskType: 'report', ...exits(0, { runMs: 2000, message: '{"rows":7}' }) }], logging);
    await waitFor(() => last(child.statuses, 'acked-task')?.phase === 'running' || undefined, 30_000, () => `the task to run (${child.stderr()})`);
    // kwok serves one file for every such container: only this run's lines count
    const prefix = `acked-${process.pid}-${Date.now()}`;
    const kept = Array.from({ length: 3 }, (_, i) => `${prefix} line ${i}`);
    for (const [i, text] of kept.entries()) appendFileSync(kwokContainerLogPath(), `${new Date().toISOString().replace('Z', `${String(i).padStart(6, '0')}Z`)} stdout F ${text}\n`);
    await waitFor(() => last(child.statuses, 'acked-task')?.phase === 'succeeded' || undefined, 30_000, 'the task to succeed');
    // the child's onStatus returns at once: acknowledged; its record says so (`done`) once stored
    const done = async () => (await admin.core.listNamespacedConfigMap({ namespace: env.namespace, labelSelector: 'rollcall.dev/task-record=acked,rollcall.dev/task-state=done' })).items.length === 1;
    await waitFor(done, 15_000, 'the acknowledgement to be stored on the record');
    await waitFor(async () => (await runnerPods(env.namespace, 'acked')).length === 0, 15_000, 'the pod to be deleted');
    await child.kill();

    const reports: TaskStatus[] = [];
    const next = await startRunner(env, { name: 'acked', templates: logging, onStatus: (s) => reports.push(s) });
    closing.push(next);
    expect(await next.result('acked-task')).toMatchObject({ phase: 'succeeded', exitCode: 0, result: { rows: 7 } });
    const lines: string[] = [];
    for await (const line of next.logs('acked-task')) if (line.text.startsWith(prefix)) lines.push(line.text);
    expect(lines).toEqual(kept);
    expect(reports.filter((r) => r.taskId === 'acked-task')).toEqual([]); // acknowledged before the kill: not handed over again
  });
});
