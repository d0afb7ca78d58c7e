/**
 * The scheduler's master/worker failover, written with Rollcall
 * (docs/failover.md): two masters campaign for `scheduler`, the leader runs
 * `registry.failover('worker', …)`, three workers announce themselves and run
 * the tasks a task table assigns to their incarnation. Then:
 *
 * 1. worker-3 crashes (cut off for good): the leader moves its tasks to the
 *    live workers, once;
 * 2. worker-2 is cut off past its lease, as a paused process is: it learns
 *    `lost` by its own clock and stops its tasks; the leader is cut off in the
 *    middle of moving them, and the other master resumes the failover and
 *    acknowledges it once; worker-2's write in flight lands late and the task
 *    table refuses it (it records every failed-over incarnation).
 *
 * It prints what happens and a verdict, and exits 1 if the verdict fails.
 * Everything runs in one process on the memory store (each node a registry of
 * its own on one MemoryBackend), so a crash is a store cut off with
 * `partition()`. Run it from a checkout, after `npm run build`:
 *
 *     node packages/core/examples/scheduler-failover.ts
 *
 * `packages/core/test/scheduler-example.test.ts` runs it so it cannot rot.
 */
import { createRegistry, type DeadIncarnation, type FailoverRun, type Leadership, type MemberHandle, type Registry } from '@rollcall/core';
import { MemoryBackend, MemoryStore } from '@rollcall/core/testing';

const timing = {
  election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
  member: { heartbeatIntervalMs: 500, leaseDurationMs: 2000 },
};
const backend = new MemoryBackend();
const started = performance.now();
const log = (line: string) => console.log(`[${((performance.now() - started) / 1000).toFixed(2).padStart(6)} s] ${line}`);
const short = (incarnation: string | undefined) => `#${String(incarnation).slice(-6)}`;

/** Who a task belongs to: a worker's incarnation, not just its id. */
interface Owner {
  id: string;
  incarnation: string;
}

/**
 * The scheduler's task table, the fenced resource: a task moves only under a
 * fencing token no smaller than the largest seen (a deposed leader is
 * refused), and once an incarnation's tasks are being moved, no write of that
 * incarnation is accepted (a worker back from a pause is refused).
 */
class TaskTable {
  readonly owners = new Map<string, Owner>();
  /** How often each task moved away from each incarnation: `task from #incarnation` → count. */
  readonly moves = new Map<string, number>();
  private readonly failedOver = new Set<string>();
  private maxToken = 0;
  accepted = 0;
  refused = 0;

  assign(task: string, owner: Owner): void {
    this.owners.set(task, owner);
  }

  ownedBy(owner: Owner): string[] {
    return [...this.owners].filter(([, o]) => o.incarnation === owner.incarnation).map(([task]) => task);
  }

  /** A worker's progress on a task: accepted only from the task's owner, never from a failed-over incarnation. */
  progress(task: string, from: Owner): boolean {
    const ok = this.owners.get(task)?.incarnation === from.incarnation && !this.failedOver.has(from.incarnation);
    if (ok) this.accepted++;
    else this.refused++;
    return ok;
  }

  /** Moves `task` from `dead` to `to` under `fencingToken`; idempotent (a task already moved stays where it is). */
  reassign(task: string, dead: Owner, to: Owner, fencingToken: number): void {
    if (fencingToken < this.maxToken) throw new Error(`fencing token ${fencingToken} refused: ${this.maxToken} was seen`);
    this.maxToken = fencingToken;
    this.failedOver.add(dead.incarnation);
    if (this.owners.get(task)?.incarnation !== dead.incarnation) return;
    this.owners.set(task, to);
    const move = `${task} from ${dead.id} ${short(dead.incarnation)}`;
    this.moves.set(move, (this.moves.get(move) ?? 0) + 1);
  }
}

const table = new TaskTable();
/** Failovers acknowledged, by incarnation; and the runs that resumed an earlier leader's claim. */
const acks = new Map<string, number>();
const resumedBy: string[] = [];
/** Awaited between two tasks of a failover: the scenario cuts the leader off there. */
let betweenTasks: (master: string, signal: AbortSignal) => Promise<void> = async () => {};
/** Every worker's work loop, stopped at the end. */
const loops: NodeJS.Timeout[] = [];

interface Master {
  name: string;
  store: MemoryStore;
  registry: Registry;
  leadership: Leadership;
}

async function master(name: string): Promise<Master> {
  const store = new MemoryStore({ backend, cluster: 'scheduler' });
  const registry = await createRegistry({ type: 'memory', cluster: 'scheduler', identity: name, ...timing }, { store });
  const leadership = registry.campaign('scheduler');
  leadership.on('elected', ({ fencingToken }) => log(`${name} leads, fencing token ${fencingToken}`));
  leadership.on('lost', ({ reason }) => log(`${name} no longer leads (${reason})`));
  const failover = registry.failover('worker', leadership, async (dead: DeadIncarnation, run: FailoverRun) => {
    log(`${name} fails ${dead.id} ${short(dead.incarnation)} over (${dead.reason}${run.resumed ? ', resumed: an earlier leader claimed it' : ''}), token ${run.fencingToken}`);
    if (run.resumed) resumedBy.push(name);
    const from = { id: dead.id, incarnation: dead.incarnation };
    const live = (await registry.members('worker')).filter((m) => m.id !== dead.id);
    if (live.length === 0) throw new Error('no live worker to take the tasks');
    for (const [i, task] of table.ownedBy(from).entries()) {
      if (run.signal.aborted) throw run.signal.reason; // the term ended: the next leader resumes
      const to = live[i % live.length]!;
      table.reassign(task, from, { id: to.id, incarnation: to.incarnation }, run.fencingToken);
      log(`  ${task}: ${dead.id} -> ${to.id}`);
      await betweenTasks(name, run.signal);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });
  failover.on('acknowledged', (dead) => {
    acks.set(dead.incarnation, (acks.get(dead.incarnation) ?? 0) + 1);
    log(`${name}: ${dead.id} ${short(dead.incarnation)} failed over, acknowledged`);
  });
  return { name, store, registry, leadership };
}

interface Worker {
  id: string;
  store: MemoryStore;
  registry: Registry;
  handle: MemberHandle;
  owner: Owner;
  /** The write it has in flight: sent before it was cut off, landing whenever it lands. */
  inFlight?: string;
}

async function worker(id: string, tasks: string[]): Promise<Worker> {
  const store = new MemoryStore({ backend, cluster: 'scheduler' });
  const registry = await createRegistry({ type: 'memory', cluster: 'scheduler', identity: id, ...timing }, { store });
  const handle = await registry.announce({ role: 'worker', id, payload: { slots: 4 } });
  const w: Worker = { id, store, registry, handle, owner: { id, incarnation: handle.incarnation! } };
  for (const task of tasks) table.assign(task, w.owner);
  handle.on('lost', ({ reason }) => log(`${id} lost its incarnation ${short(w.owner.incarnation)} (${reason}) by its own clock: it stops its ${table.ownedBy(w.owner).length} tasks`));
  // The work loop: only while this incarnation is alive, only the tasks the table gives it.
  const tick = setInterval(() => {
    if (!handle.alive) return;
    if (w.owner.incarnation !== handle.incarnation) w.owner = { id, incarnation: handle.incarnation! }; // a new incarnation, new tasks
    for (const task of table.ownedBy(w.owner)) table.progress(task, w.owner);
  }, 100);
  loops.push(tick);
  return w;
}

function until(what: string, predicate: () => boolean, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = performance.now() + timeoutMs;
    const poll = setInterval(() => {
      if (predicate()) resolve(clearInterval(poll));
      else if (performance.now() > deadline) reject((clearInterval(poll), new Error(`${what}: not within ${timeoutMs} ms`)));
    }, 10);
  });
}

const masters = [await master('master-1'), await master('master-2')];
await until('a leader', () => masters.some((m) => m.leadership.isLeader), 5000);
const workers = [await worker('worker-1', ['t1', 't2', 't3']), await worker('worker-2', ['t4', 't5', 't6']), await worker('worker-3', ['t7', 't8', 't9'])];
const [, w2, w3] = workers as [Worker, Worker, Worker];
log(`3 workers run 9 tasks: ${workers.map((w) => `${w.id} ${short(w.owner.incarnation)} ${table.ownedBy(w.owner).join(',')}`).join('; ')}`);
await new Promise((resolve) => setTimeout(resolve, 1000)); // the leader notes every worker alive

// 1. worker-3 crashes.
log(`worker-3 crashes (cut off for good)`);
w3.store.partition();
await until('worker-3 failed over', () => acks.has(w3.owner.incarnation), 10_000);

// 2. worker-2 is cut off past its lease, a write in flight; the leader is cut off while it moves worker-2's tasks.
const leader = masters.find((m) => m.leadership.isLeader)!;
const paused = w2.owner;
w2.inFlight = table.ownedBy(paused)[0];
betweenTasks = async (name, signal) => {
  if (name !== leader.name) return;
  betweenTasks = async () => {};
  log(`${leader.name} is cut off in the middle of the failover, and hangs there (as a crash looks to the other master)`);
  leader.store.partition();
  // It steps down by its own renew deadline; its handler's signal aborts then.
  await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
};
log(`worker-2 is cut off past its lease (as a paused process is), its write on ${w2.inFlight} in flight`);
w2.store.partition();
await until('worker-2 lost by its own clock', () => !w2.handle.alive, 5000);
await until('worker-2 failed over', () => acks.has(paused.incarnation), 20_000);
w2.store.heal();
const late = table.progress(w2.inFlight!, paused);
log(`worker-2 is back: alive ${w2.handle.alive} (it announces itself again, a new incarnation with no tasks); its write in flight from ${short(paused.incarnation)} lands now: ${late ? 'ACCEPTED' : 'refused'}`);

// The verdict.
const live = new Set([...(await masters.find((m) => m !== leader)!.registry.members('worker'))].map((m) => m.incarnation));
const orphans = [...table.owners].filter(([, o]) => !live.has(o.incarnation)).map(([task]) => task);
const movedTwice = [...table.moves].filter(([, n]) => n > 1).map(([move]) => move);
const checks: [string, boolean][] = [
  [`worker-3 ${short(w3.owner.incarnation)} failed over once`, acks.get(w3.owner.incarnation) === 1],
  [`worker-2 ${short(paused.incarnation)} failed over once, resumed by ${resumedBy.join(', ') || 'nobody'} after ${leader.name} was cut off`, acks.get(paused.incarnation) === 1 && resumedBy.length === 1 && resumedBy[0] !== leader.name],
  [`no task moved twice away from one incarnation (${table.moves.size} moves)${movedTwice.length ? ` (${movedTwice.join(', ')})` : ''}`, movedTwice.length === 0],
  [`every task owned by a live worker${orphans.length ? ` (not: ${orphans.join(', ')})` : ''}`, orphans.length === 0],
  // worker-2 checked `alive` before each write: the late write is the only one of a failed-over incarnation.
  [`worker-2 stopped by itself; the one late write of its failed-over incarnation refused (${table.accepted} writes accepted, ${table.refused} refused)`, !late && table.refused === 1],
];
for (const [what, ok] of checks) log(`verdict: ${ok ? 'ok  ' : 'FAIL'} ${what}`);
process.exitCode = checks.every(([, ok]) => ok) ? 0 : 1;

loops.forEach((loop) => clearInterval(loop));
for (const node of [...masters, ...workers]) node.store.heal();
await Promise.all([...masters, ...workers].map((node) => node.registry.close()));
