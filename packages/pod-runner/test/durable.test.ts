import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { type AuditEvent, AuditLog, requireTestEnv } from '@rollcall/tools/testenv';
import type { Task, TaskStatus } from '../src/index.js';
import { admin, exits, fixtureChild, podTemplate, runnerNamespace, runnerPods } from './runner-env.js';

let env: { namespace: string; kubeconfig: string };
let audit: AuditLog;
const children: { kill(): Promise<void> }[] = [];
const templates = [{ name: 'default', template: podTemplate() }];

beforeAll(async () => {
  env = await runnerNamespace('pod-durable');
  audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => {
    await admin.core.readNamespacedPod({ namespace: env.namespace, name }).catch(() => undefined);
  });
});

afterAll(async () => {
  for (const child of children) await child.kill();
});

type Kill = { after: string; nth: number } | { beforeAck: number } | undefined;

/** A runner in a child process (test/fixtures/durable-child.mjs): what it printed, and its exit. */
function childRunner(tasks: Task[], ackFile: string, kill: Kill) {
  const lines: string[] = [];
  const child = fixtureChild('durable-child.mjs', { ...env, name: 'durable', templates, capacity: 2, tasks, ackFile, kill }, (line) => lines.push(line));
  const handle = { lines, exit: child.exit, exited: child.exited, stderr: child.stderr, kill: async () => void (child.exited() || child.signal('SIGKILL'), await child.exit) };
  children.push(handle);
  return handle;
}

const acks = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Pick<TaskStatus, 'taskId' | 'attempt' | 'phase'>) : []);

// Every kind of request the runner makes, killed right after its answer arrives (before the runner
// sees it), and a kill instead of an acknowledgement; `nth` picks a request that comes mid-run. The
// streams (the pod watch, a log capture) are long reads that change nothing: a kill during one is any
// of these. A pod's events are listed only on a pending timeout, which these tasks never reach.
const KILLS: Kill[] = [
  { after: 'list configmaps', nth: 1 }, // the task records listed at start
  { after: 'update leases', nth: 1 }, // the term Lease raised to this start's term
  { after: 'get configmaps', nth: 1 }, // the v1 ledger looked for, to be moved (absent: 404)
  { after: 'create (dry run) pods', nth: 1 }, // a template checked at start
  { after: 'list pods', nth: 1 }, // the term's pod list
  { after: 'create configmaps', nth: 1 }, // a submit stored: the task's record
  { after: 'create pods', nth: 1 },
  { beforeAck: 1 },
  { after: 'update configmaps', nth: 2 }, // a terminal status or an acknowledgement stored on its record
  { after: 'patch pods', nth: 1 }, // the finalizer off, the term stamped
  { after: 'delete pods', nth: 1 },
  { beforeAck: 2 },
];

describe('a runner killed with SIGKILL after every kind of API request and before an acknowledgement', () => {
  it('loses no accepted task, acknowledges one terminal status per task, and creates at most one pod per task attempt', async () => {
    const ackFile = join(mkdtempSync(join(tmpdir(), 'rollcall-durable-')), 'acks.jsonl');
    const tasks: Task[] = Array.from({ length: 12 }, (_, i) => ({ taskId: `durable-${i}`, taskType: 'report', ...exits(0, { runMs: 1500 }) }));
    const accepted = new Set<string>();
    const window = audit.open();
    let kills = 0;
    for (const kill of KILLS) {
      // the scheduler submits what was not accepted yet (a submit that did not resolve is not accepted)
      const child = childRunner(tasks.filter((t) => !accepted.has(t.taskId)), ackFile, kill);
      await waitFor(() => child.exited(), 60_000, () => `the runner to reach ${JSON.stringify(kill)} and be killed (it printed ${child.lines.slice(-3).join(' | ')}; ${child.stderr()})`);
      expect(await child.exit).toBe('SIGKILL');
      expect(child.lines.some((l) => l.startsWith('KILLED'))).toBe(true);
      kills += 1;
      for (const line of child.lines) if (line.startsWith('SUBMITTED ')) accepted.add(line.split(' ')[1]!);
      process.stderr.write(`[durable] ${child.lines.find((l) => l.startsWith('KILLED'))}; accepted ${accepted.size}, acknowledged ${acks(ackFile).length}\n`);
    }
    expect(accepted.size).toBeGreaterThan(0);

    // the last runner is not killed; it is given only what was never accepted: what was, it finds in the task records
    const last = childRunner(tasks.filter((t) => !accepted.has(t.taskId)), ackFile, undefined);
    const ackedIds = () => new Set(acks(ackFile).map((a) => a.taskId));
    await waitFor(() => ackedIds().size === tasks.length, 90_000, () => `every task acknowledged (missing ${tasks.filter((t) => !ackedIds().has(t.taskId)).map((t) => t.taskId).join(', ')}; ${last.stderr()})`);
    await waitFor(async () => (await runnerPods(env.namespace, 'durable')).length === 0, 30_000, 'every pod to be deleted');
    await last.kill();

    // exactly one terminal status acknowledged per task (delivery is at least once: a kill between an
    // acknowledgement and its record's `done` delivers the same status again, never another one)
    const acked = acks(ackFile);
    for (const task of tasks) {
      const distinct = new Set(acked.filter((a) => a.taskId === task.taskId).map((a) => JSON.stringify(a)));
      expect([...distinct], task.taskId).toEqual([JSON.stringify({ taskId: task.taskId, attempt: 1, phase: 'succeeded' })]);
    }
    expect(acked.length - tasks.length).toBeLessThanOrEqual(kills);

    // the scheduler restarted too and submits everything again: answered from the `done` records, nothing runs
    const again = childRunner(tasks, ackFile, undefined);
    await waitFor(() => again.lines.includes('ALL SUBMITTED'), 30_000, () => `the resubmits to answer (${again.stderr()})`);
    for (const line of again.lines.filter((l) => l.startsWith('SUBMITTED '))) expect(JSON.parse(line.slice(line.indexOf('{'))) as TaskStatus).toMatchObject({ phase: 'succeeded', attempt: 1 });
    expect(await runnerPods(env.namespace, 'durable')).toEqual([]);
    await again.kill();
    expect(acks(ackFile)).toHaveLength(acked.length);

    // at most one pod created per task attempt, from the API server's audit log (dry runs aside)
    const creates = new Map<string, number>();
    for (const e of (await audit.requests(window)) as (AuditEvent & { responseStatus?: { code?: number } })[]) {
      if (e.verb !== 'create' || e.objectRef?.resource !== 'pods' || e.objectRef.subresource || e.objectRef.namespace !== env.namespace || e.requestURI?.includes('dryRun')) continue;
      if (e.responseStatus?.code !== 201) continue;
      creates.set(e.objectRef.name ?? '', (creates.get(e.objectRef.name ?? '') ?? 0) + 1);
    }
    expect(Object.fromEntries(creates)).toEqual(Object.fromEntries(tasks.map((t) => [`durable-${t.taskId}-1`, 1])));
  }, 980_000); // above the sum of its waits: twelve kills of 60 s, 90 s, 30 s twice, the audit marker's 30 s
});
