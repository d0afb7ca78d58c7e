import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, type ExpectStatic, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { AuditLog, requireTestEnv } from '@rollcall/tools/testenv';
import type { Task, TaskStatus } from '../src/index.js';
import type { WriteMeaning } from '../src/test-hooks.js';
import { type AckedEnd, type AskedAttempt, crashVerdict, redeliveries } from './crash-verdict.js';
import { PairMember, type Role } from './crash-pair.js';
import { admin, exits, podTemplate, runnerNamespace, runnerPods } from './runner-env.js';

// Issue 35 item 6: a runner of an HA pair (kubernetes registry, two processes) SIGKILLs itself right after
// one kind of write by meaning — the runner's test hook `afterWrite` (src/test-hooks.ts) — and a new runner
// starts in its place; the pair finishes the work. Each point runs the same mix under its own runner name
// (its records, pods, election and term Lease apart): a task that succeeds, one retried by its template's
// policy, one cancelled while it runs, one submitted through the follower, and one resubmitted as attempt 2
// through the follower after its first attempt ended; capacity 2, so some wait queued.
// A request a killed runner never answered is sent again to the runner that replaced it, as a scheduler
// would (a submit and a cancel are idempotent); what was stored before the kill must not need it.

interface Point {
  /** The write, as issue 35 names it. */
  name: string;
  /** Whose process dies: the leader's (the term's writes) or the follower's (its submit, resubmit, cancel). */
  victim: Role;
  /** The write after which it dies; `handedOver`: no write, its onStatus killed after it stored the status and before it returned. */
  meaning: WriteMeaning | 'handedOver';
}

const POINTS: Point[] = [
  { name: 'task-stored', victim: 'leader', meaning: 'submit' }, // a submit's record created, on the leader
  { name: 'pod-created', victim: 'leader', meaning: 'createPod' },
  { name: 'end-stored', victim: 'leader', meaning: 'end' }, // a terminal status on the record, before delivery
  { name: 'status-acked', victim: 'leader', meaning: 'ack' }, // the record `done` after onStatus returned
  { name: 'status-handed-over', victim: 'leader', meaning: 'handedOver' }, // onStatus stored it, the record not yet `done`: delivered again
  { name: 'retry-stored', victim: 'leader', meaning: 'retry' }, // the retry's next attempt on the record
  { name: 'cancel-stored', victim: 'leader', meaning: 'cancel' }, // the cancel's end on the record
  { name: 'resubmit-stored', victim: 'leader', meaning: 'resubmit' }, // the next attempt a follower asked for, written
  { name: 'pod-released', victim: 'leader', meaning: 'releasePod' }, // an ended pod's finalizer off (its end stored)
  { name: 'pod-deleted', victim: 'leader', meaning: 'deletePod' },
  { name: 'submit-created', victim: 'follower', meaning: 'submit' }, // a follower's submit: its record created
  { name: 'resubmit-requested', victim: 'follower', meaning: 'submitRequested' }, // a follower's next attempt asked on the record
  { name: 'cancel-requested', victim: 'follower', meaning: 'cancelRequested' }, // a follower's cancel asked on the record
];

const timing = { election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 400 } };
const templates = [
  { name: 'flaky', taskTypes: ['flaky'], retry: { maxAttempts: 2, backoffMs: 200, retryOn: { exitCodes: { operator: 'In' as const, values: [3] } } }, template: podTemplate() },
  { name: 'default', template: podTemplate() },
];
const TASKS = {
  ok: { taskId: 'ok', taskType: 'report', ...exits(0, { runMs: 1500 }) },
  retry: { taskId: 'retry', taskType: 'flaky', ...exits(3, { runMs: 300 }) },
  cancel: { taskId: 'cancel', taskType: 'report', ...exits(0, { runMs: 120_000 }) },
  follow: { taskId: 'follow', taskType: 'report', ...exits(0, { runMs: 300 }) },
  again: { taskId: 'again', taskType: 'report', ...exits(0, { runMs: 300 }) },
} satisfies Record<string, Task>;
/** How each task ends, whoever ran it: [task id, attempt, phase]. */
const EXPECTED_ENDS = [['ok', 1, 'succeeded'], ['retry', 2, 'failed'], ['cancel', 1, 'cancelled'], ['follow', 1, 'succeeded'], ['again', 1, 'succeeded'], ['again', 2, 'succeeded']];

let env: { namespace: string; kubeconfig: string };
let audit: AuditLog;
let dir: string;
const members: PairMember[] = [];

beforeAll(async () => {
  env = await runnerNamespace('pod-crash-every');
  audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => {
    await admin.core.readNamespacedPod({ namespace: env.namespace, name }).catch(() => undefined);
  });
  dir = mkdtempSync(join(tmpdir(), 'rollcall-crash-every-'));
});

afterAll(async () => {
  for (const m of members) await m.stop();
});

const acked = (file: string): AckedEnd[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as AckedEnd) : []);

/** The pair of one point: a member per role, the victim replaced by a new process once it killed itself. */
class Pair {
  private readonly current = new Map<Role, Promise<PairMember>>();
  private requests = 0;
  readonly killed: string[] = [];
  /** Members that exited neither at their kill point nor stopped by the test: their stderr. */
  readonly crashed: string[] = [];

  constructor(
    private readonly point: Point,
    private readonly runner: string,
    private readonly statusFile: string,
  ) {}

  /** Starts the member of `role` (the first of its role carries the kill); resolves once it runs (the leader: once elected). */
  async start(role: Role, generation = 1): Promise<PairMember> {
    const kill = generation === 1 && role === this.point.victim ? { meaning: this.point.meaning, nth: 1 } : undefined;
    const member = new PairMember({ ...env, name: this.runner, identity: `${role}-${generation}`, timing, capacity: { total: 2 }, templates, statusFile: this.statusFile, kill });
    members.push(member);
    const started = member.started(role === 'leader' && generation === 1);
    this.current.set(role, started.then(() => member));
    void member.exit.then(() => {
      const line = member.killedLine();
      if (!line) return void (member.stopped || this.crashed.push(`${member.config.identity}: ${member.output()}`));
      this.killed.push(line);
      // a replacement that fails to start fails the request waiting on it
      void this.start(role, generation + 1).catch(() => undefined);
    });
    await started;
    return member;
  }

  /** What befell its members so far, for a wait's message. */
  story(): string {
    return `killed ${this.killed.join(', ') || 'none'}${this.crashed.length ? `; crashed ${this.crashed.join('; ')}` : ''}`;
  }

  /** Sends a request to the member of `role`; sent again to its replacement if that member died before answering. */
  async ask(role: Role, request: { op: 'submit'; task: Task } | { op: 'cancel'; taskId: string }): Promise<TaskStatus> {
    for (;;) {
      const member = await this.current.get(role)!;
      const answer = await member.ask(++this.requests, request);
      if (answer === 'died') {
        if (!member.killedLine()) throw new Error(`${member.config.identity} of ${this.runner} died before answering ${JSON.stringify(request)}, not at its kill point: ${member.output()}`);
        // its replacement is started on its exit, before this resumes
        await member.exit;
        continue;
      }
      if (answer.kind === 'refused') throw new Error(`${role} refused ${JSON.stringify(request)}: ${answer.code} ${answer.message}`);
      return answer.status;
    }
  }

  async stop(): Promise<void> {
    for (const role of ['leader', 'follower'] as const) await (await this.current.get(role)?.catch(() => undefined))?.stop();
  }
}

async function runPoint(point: Point, expect: ExpectStatic): Promise<void> {
  const runner = `cew-${point.name}`;
  const statusFile = join(dir, `${point.name}.jsonl`);
  const window = audit.open();
  const pair = new Pair(point, runner, statusFile);
  await pair.start('leader');
  await pair.start('follower');

  const asked: AskedAttempt[] = [];
  const submit = (role: Role, task: Task) => (asked.push({ taskId: task.taskId, attempt: task.attempt ?? 1 }), pair.ask(role, { op: 'submit', task }));
  await submit('leader', TASKS.ok);
  await submit('leader', TASKS.retry);
  await submit('leader', TASKS.cancel);
  await submit('follower', TASKS.follow);
  await submit('leader', TASKS.again);
  const cancelPod = `${runner}-cancel-1`;
  await waitFor(async () => (await runnerPods(env.namespace, runner)).some((p) => p.metadata?.name === cancelPod && p.status?.phase === 'Running') || undefined, 30_000, () => `${point.name}: ${cancelPod} to run (${pair.story()})`);
  await pair.ask('follower', { op: 'cancel', taskId: 'cancel' });
  await waitFor(() => acked(statusFile).some((e) => e.taskId === 'again' && e.attempt === 1) || undefined, 30_000, () => `${point.name}: attempt 1 of again to be acknowledged (${pair.story()})`);
  await submit('follower', { ...TASKS.again, attempt: 2 });

  const missing = () => crashVerdict({ asked, acked: acked(statusFile), creates: [] }).filter((v) => v.kind === 'never-ended');
  await waitFor(() => missing().length === 0, 60_000, () => `${point.name}: every task to end (missing ${JSON.stringify(missing())}; ${pair.story()})`);
  await waitFor(async () => (await runnerPods(env.namespace, runner)).length === 0, 30_000, () => `${point.name}: every pod to be deleted (${pair.story()})`);
  await pair.stop();
  expect(pair.crashed, point.name).toEqual([]);
  // the point was reached: the victim killed itself right after that write
  expect(pair.killed, point.name).toEqual([expect.stringMatching(new RegExp(`^${point.victim}-1 after ${point.meaning} of `))]);

  const creates = (await audit.requests(window))
    .filter((e) => e.verb === 'create' && e.objectRef?.resource === 'pods' && !e.objectRef.subresource && e.objectRef.namespace === env.namespace && !(e.requestURI ?? '').includes('dryRun'))
    .filter((e) => e.objectRef?.name?.startsWith(`${runner}-`))
    .map((e) => ({ podName: e.objectRef!.name!, code: e.responseStatus?.code ?? 0 }));
  const ends = acked(statusFile);
  process.stderr.write(`[crash-every-write] ${point.name}: killed ${pair.killed.join(', ')}; ${ends.length} acknowledgements, ${redeliveries(ends)} repeated; ${creates.filter((c) => c.code === 201).length} pods created\n`);
  expect(crashVerdict({ asked, acked: ends, creates }), point.name).toEqual([]);
  // at least once: the end handed over as the runner died is handed over again by the next leader, the same end
  if (point.meaning === 'handedOver') expect(redeliveries(ends), point.name).toBeGreaterThanOrEqual(1);
  // and each ended as its task says, whoever ended it
  expect([...new Set(ends.map((e) => JSON.stringify([e.taskId, e.attempt, e.phase])))].sort()).toEqual(EXPECTED_ENDS.map((e) => JSON.stringify(e)).sort());
}

/** Points run three at a time: most of a point is waiting (a lease to expire, a task to run), and the machine is small. */
const slots = { free: 3, waiting: [] as (() => void)[] };
async function inSlot<T>(run: () => Promise<T>): Promise<T> {
  if (slots.free > 0) slots.free--;
  else await new Promise<void>((resolve) => slots.waiting.push(resolve));
  try {
    return await run();
  } finally {
    const next = slots.waiting.shift();
    if (next) next();
    else slots.free++;
  }
}

describe.concurrent('an HA pair whose runner is SIGKILLed right after each kind of write, then replaced', () => {
  for (const point of POINTS) {
    it(`${point.victim} killed after ${point.name}: one acknowledged end per attempt, at most one pod create per attempt, no task lost`, ({ expect }) => inSlot(() => runPoint(point, expect)), 300_000);
  }
});
