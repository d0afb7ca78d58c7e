import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observeFor, waitFor } from '@rollcall/conformance';
import { createRegistry, type Registry } from '@rollcall/core';
import { ManualClock, MemoryBackend, MemoryStore } from '@rollcall/core/testing';
import { registryPlugin } from '@rollcall/kubernetes';
import { AuditLog, type AuditEvent, requireTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import type { PodRunner, Task, TaskStatus } from '../src/index.js';
import { admin, exits, fixtureChild, podTemplate, runnerNamespace, runnerPods, startRunner, untilAuthorized } from './runner-env.js';

/**
 * A leader stopped past its lease and resumed after another took over, as a
 * long GC pause or a frozen VM does: it must change nothing. The two runners
 * are two service accounts, so the API server's audit log tells their
 * requests apart.
 */
let env: { namespace: string; kubeconfig: string };
let kubeconfigB: string;
const closing: { close(): Promise<void> }[] = [];
const name = 'fence';
const timing = { election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 400 } };
const templates = [{ name: 'default', template: podTemplate() }];
const WRITES = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

beforeAll(async () => {
  env = await runnerNamespace('pod-fencing');
  // runner B: its own service account, bound to the shipped Roles
  await admin.objects.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'rollcall-pod-runner-b', namespace: env.namespace } });
  for (const role of ['rollcall-pod-runner', 'rollcall-pod-runner-election']) {
    await admin.objects.create({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${role}-b`, namespace: env.namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
      subjects: [{ kind: 'ServiceAccount', name: 'rollcall-pod-runner-b', namespace: env.namespace }],
    } as never);
  }
  await untilAuthorized(env.namespace, 'rollcall-pod-runner-b');
  kubeconfigB = await serviceAccountKubeconfig(env.namespace, 'rollcall-pod-runner-b');
});

afterAll(async () => {
  for (const c of closing.reverse()) await c.close().catch(() => undefined);
});

type ChildLine = { kind: 'elected'; fencingToken: number } | { kind: 'lost'; reason: string } | { kind: 'fenced'; verb: string } | { kind: 'status'; status: TaskStatus } | { kind: 'submitted' };

/** Runner A: a runner with a registry in a child process, as the namespace's rollcall-pod-runner service account. */
function leaderChild(tasks: Task[]) {
  const lines: ChildLine[] = [];
  const child = fixtureChild('leader-child.mjs', { ...env, name, identity: 'runner-a', timing, capacity: { total: 2 }, templates, tasks }, (line) => {
    if (line.startsWith('{')) lines.push(JSON.parse(line) as ChildLine);
  });
  closing.push({ close: async () => (child.signal('SIGCONT'), child.signal('SIGKILL'), await child.exit.then(() => undefined)) });
  return { lines, signal: child.signal, stderr: child.stderr };
}

const phaseIn = (lines: ChildLine[], id: string) => lines.filter((l): l is Extract<ChildLine, { kind: 'status' }> => l.kind === 'status' && l.status.taskId === id).at(-1)?.status.phase;
const ended = (reports: TaskStatus[], id: string) => reports.filter((r) => r.taskId === id && ['succeeded', 'failed', 'timed-out', 'cancelled', 'lost'].includes(r.phase));
const code = (e: AuditEvent) => (e as AuditEvent & { responseStatus?: { code?: number } }).responseStatus?.code ?? 0;

describe('fencing', () => {
  it('a leader stopped (SIGSTOP) mid-task past its lease, then resumed (SIGCONT) after another runner took over: no write of its identity is accepted after it resumes', async () => {
    const tasks: Task[] = [
      { taskId: 'runs-across', taskType: 'report', ...exits(0, { runMs: 12_000 }) },
      // kwok runs it 20 s; the runners' own run timer ends it after 3
      { taskId: 'run-timer', taskType: 'report', timeouts: { run: 3000 }, ...exits(0, { runMs: 20_000 }) },
      { taskId: 'queued-behind', taskType: 'report', ...exits(0, { runMs: 500 }) },
    ];
    const a = leaderChild(tasks);
    await waitFor(() => a.lines.some((l) => l.kind === 'submitted') && phaseIn(a.lines, 'runs-across') === 'running' && phaseIn(a.lines, 'run-timer') === 'running', 60_000, () => `runner A to lead and run two tasks, one queued (${a.stderr()})`);
    expect(phaseIn(a.lines, 'queued-behind')).toBe('queued');
    // A's run timer of `run-timer` and its renew deadline both pass while it is stopped: when it resumes, its
    // overdue timers and what its watch brings of B's doing meet a runner that has not yet heard it lost
    a.signal('SIGSTOP');

    // runner B, the other service account, given the same tasks, takes over once A's lease lapses
    const registry = await createRegistry({ type: 'kubernetes', cluster: 'pods', identity: 'runner-b', ...timing, kubernetes: { kubeconfig: kubeconfigB, namespace: env.namespace } }, { plugins: [registryPlugin as never] });
    closing.push(registry);
    const reports: TaskStatus[] = [];
    // capacity 1: B, re-attached to both pods, times one out and creates the queued task only once the other ends
    const b: PodRunner = await startRunner({ namespace: env.namespace, kubeconfig: kubeconfigB }, { name, registry, identity: 'runner-b', capacity: { total: 1 }, templates, onStatus: (s) => reports.push(s) });
    closing.push(b);
    for (const task of tasks) await b.submit(task);
    await waitFor(() => b.isLeader, 30_000, 'runner B to take over from the stopped A');
    expect(await b.result('run-timer')).toMatchObject({ phase: 'timed-out', reason: 'RunTimeout' });
    expect(b.get('queued-behind')?.phase).toBe('queued');

    const audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (marker) => {
      await admin.core.readNamespacedPod({ namespace: env.namespace, name: marker }).catch(() => undefined);
    });
    const window = audit.open();
    const resumedAt = a.lines.length;
    a.signal('SIGCONT');
    await waitFor(() => a.lines.slice(resumedAt).some((l) => l.kind === 'lost'), 15_000, 'runner A, resumed, to find it lost its leadership');

    for (const id of ['runs-across', 'queued-behind']) expect((await b.result(id)).phase, id).toBe('succeeded');
    await waitFor(async () => (await runnerPods(env.namespace, name)).length === 0, 20_000, 'every pod to be deleted');
    for (const task of tasks) expect(ended(reports, task.taskId), task.taskId).toHaveLength(1);

    const requests = await audit.requests(window);
    const userA = `system:serviceaccount:${env.namespace}:rollcall-pod-runner`;
    const userB = `system:serviceaccount:${env.namespace}:rollcall-pod-runner-b`;
    const accepted = (user: string) => requests.filter((e) => e.user?.username === user && WRITES.has(e.verb) && code(e) >= 200 && code(e) < 300).map((e) => `${e.verb} ${e.objectRef?.resource} ${e.objectRef?.name} ${code(e)}`);
    expect(accepted(userA)).toEqual([]);
    // B did the work in that window: the task that ran across the pause, recorded and deleted by B
    expect(accepted(userB).filter((w) => w.includes('fence-runs-across-1'))).toEqual([expect.stringMatching(/^patch pods /), expect.stringMatching(/^delete pods /)]);
    // A reported no end after it resumed: B's records reached it through the watch
    expect(a.lines.slice(resumedAt).filter((l) => l.kind === 'status' && ['succeeded', 'failed', 'timed-out', 'cancelled', 'lost'].includes(l.status.phase))).toEqual([]);
  });

  it('a leader past its renew deadline by its clock, before its timers have run (the moment a pause ends): a pod event it reads changes nothing, until it hears it lost and the next term acts', async () => {
    // the election on core's memory store and ManualClock: jump() moves time as a pause does, firing no timer
    const clock = new ManualClock(Date.now());
    const backend = new MemoryBackend();
    const member = async (identity: string): Promise<Registry> => {
      const r = await createRegistry({ type: 'memory', cluster: 'jump', identity }, { store: new MemoryStore({ backend, cluster: 'jump' }), clock });
      closing.push(r);
      return r;
    };
    const reportsA: TaskStatus[] = [];
    const reportsB: TaskStatus[] = [];
    const a = await startRunner(env, { name: 'jump', registry: await member('runner-a'), identity: 'runner-a', clock, onStatus: (s) => reportsA.push(s) });
    closing.push(a);
    const fencedA: string[] = [];
    a.observe((activity) => void (activity.type === 'fenced' && fencedA.push(activity.verb)));
    expect(await clock.advanceUntil(() => a.isLeader, 5000)).toBe(true);
    const b = await startRunner({ namespace: env.namespace, kubeconfig: kubeconfigB }, { name: 'jump', registry: await member('runner-b'), identity: 'runner-b', clock, onStatus: (s) => reportsB.push(s) });
    closing.push(b);
    expect(b.isLeader).toBe(false);

    const { podName } = await a.submit({ taskId: 'ends-after-jump', taskType: 'report', ...exits(0, { runMs: 1500 }) });
    await waitFor(() => a.get('ends-after-jump')?.phase === 'running', 15_000, 'the task to run');
    const audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (marker) => {
      await admin.core.readNamespacedPod({ namespace: env.namespace, name: marker }).catch(() => undefined);
    });
    const window = audit.open();
    clock.jump(10_001); // the default renew deadline, 10 s, has passed; no timer has fired, no `lost` is heard
    expect(a.isLeader).toBe(false);

    // the container ends: A's watch brings it, and A — no longer sure it leads — neither reports it nor writes
    await waitFor(async () => (await admin.core.readNamespacedPod({ namespace: env.namespace, name: podName })).status?.containerStatuses?.[0]?.state?.terminated !== undefined, 15_000, 'the container to end');
    await observeFor(2000);
    expect(a.get('ends-after-jump')?.phase).toBe('running');
    expect(reportsA.filter((r) => r.phase === 'succeeded')).toEqual([]);
    const userA = `system:serviceaccount:${env.namespace}:rollcall-pod-runner`;
    const writesA = (await audit.requests(window)).filter((e) => e.user?.username === userA && WRITES.has(e.verb));
    expect(writesA.map((e) => `${e.verb} ${e.objectRef?.name} ${code(e)}`)).toEqual([]);
    // what it decided and held back is counted (rollcall_pod_runner_fenced_writes_total): the end's record update
    expect(fencedA).toContain('update');

    // time moves on: A hears it lost, and whoever is elected next (A again, in a new term, or B) reports the task once and lets the pod go
    expect(await clock.advanceUntil(() => a.isLeader || b.isLeader, 60_000)).toBe(true);
    const next = a.isLeader ? a : b;
    expect(await next.result('ends-after-jump')).toMatchObject({ phase: 'succeeded' });
    await waitFor(async () => (await runnerPods(env.namespace, 'jump')).length === 0, 15_000, 'the pod to be deleted');
    expect([...reportsA, ...reportsB].filter((r) => r.phase === 'succeeded')).toHaveLength(1);
  });
});
