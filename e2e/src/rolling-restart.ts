import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { soakBackend, type BackendName, type SoakBackend } from './backends.js';
import { SoakCluster, type Placement, type SoakTiming } from './cluster.js';
import { FencedResource } from './fenced-resource.js';
import { judgeRun, runCluster, type ClusterRun } from './run-cluster.js';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import type { CandidateEvent } from './protocol.js';
import { SOAK_TIMING } from './soak.js';
import { describeHolder, termsOf, type Timeline } from './timeline.js';

/** Which configuration a process runs: the old backend alone, both (registry.type=migrate), the new one alone. */
export type Phase = 'from' | 'migrate' | 'to';

/**
 * The soak's lease timings; members on the default 20 s lease, so a restarted
 * process takes its members over (same ids) before they expire: starting Node
 * and connecting to two backends took up to 13 s on a two-core machine at a
 * load average of 20.
 */
export const ROLLING_TIMING: Readonly<SoakTiming> = Object.freeze({ ...SOAK_TIMING, member: { heartbeatIntervalMs: 1000, leaseDurationMs: 20_000 } });

export interface MigrationRunOptions {
  from: BackendName;
  to: BackendName;
  /** Candidate processes. Default 5. */
  processes?: number;
  /** Members heartbeating in all, spread over the processes (each announces itself and its share). Default 20. */
  members?: number;
  log?: (line: string) => void;
}

export interface MigrationRunResult {
  /** Empty when the run passed. */
  violations: string[];
  timeline: Timeline;
  /** Candidate logs and `timeline.json`. */
  workDir: string;
  /** Election terms and lock holds begun (in all, and by processes of each phase), restarts made, writes the resource accepted. */
  counts: { terms: number; lockHolds: number; byPhase: Record<Phase, { terms: number; lockHolds: number }>; restarts: number; writesAccepted: number };
}

/** Bound on a leader emerging after a step, milliseconds. */
const LEADER_BOUND_MS = 60_000;
/** Bound on a candidate answering a command, milliseconds. */
const ANSWER_BOUND_MS = 15_000;
/** Bound on every view holding every member, at the start and at the end, milliseconds. */
const VIEWS_BOUND_MS = 30_000;
/** How long the new leader works between two steps, milliseconds: a few lock hand-overs and fenced writes. */
const WORK_MS = 300;

/** A registry configuration per phase over two backends, each reached through the candidate's own proxy. */
function migrationPlacement(from: SoakBackend, to: SoakBackend, phases: ReadonlyMap<string, Phase>, started: Map<string, Phase>, workDir: string): Placement {
  return {
    backends: [from, to],
    registry: (name, incarnation, vias) => {
      const side = (b: SoakBackend) => ({ type: b.name, [b.name]: b.section(vias.get(b.name), workDir) });
      const phase = phases.get(name)!;
      started.set(`${name}#${incarnation}`, phase);
      if (phase === 'from') return side(from);
      if (phase === 'to') return side(to);
      return { type: 'migrate', migrate: { from: side(from), to: side(to) } };
    },
  };
}

/** The member ids: each process's own name and its share of the rest. */
function memberIds(names: readonly string[], total: number): Map<string, string[]> {
  const extra = new Map(names.map((n) => [n, [] as string[]]));
  for (let i = 0; i < total - names.length; i++) extra.get(names[i % names.length]!)!.push(`${names[i % names.length]}-m${Math.floor(i / names.length) + 1}`);
  return extra;
}

/** Everything a run needs, set up and torn down around `scenario`. */
async function withMigrationCluster(
  options: MigrationRunOptions,
  initial: Phase,
  scenario: (cluster: SoakCluster, phases: Map<string, Phase>, allIds: string[], violations: string[]) => Promise<void>,
): Promise<MigrationRunResult> {
  const from = soakBackend(options.from);
  const to = soakBackend(options.to);
  const processes = options.processes ?? 5;
  const workDir = mkdtempSync(join(tmpdir(), `rollcall-migrate-${from.name}-${to.name}-`));
  const startedAt = monotonicMs();
  const resource = await FencedResource.start();
  const names = Array.from({ length: processes }, (_, i) => `c${i + 1}`);
  const phases = new Map<string, Phase>(names.map((n) => [n, initial]));
  const extra = memberIds(names, options.members ?? 20);
  const allIds = [...names, ...[...extra.values()].flat()];
  const violations: string[] = [];
  /** The phase each incarnation (`c1#2`) started in. */
  const started = new Map<string, Phase>();
  let restartsBefore = 0;
  const run: ClusterRun = { resource, workDir, startedAt, violations };
  const start = () =>
    SoakCluster.start({
      backend: from,
      size: processes,
      cluster: `migrate-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`,
      workDir,
      resourceUrl: resource.url,
      timing: ROLLING_TIMING,
      placement: migrationPlacement(from, to, phases, started, workDir),
      extraMembers: (name) => extra.get(name) ?? [],
    });
  const cluster = await runCluster(run, start, async (cluster) => {
    restartsBefore = cluster.records.length;
    await cluster.waitForLeader(LEADER_BOUND_MS);
    await scenario(cluster, phases, allIds, violations);
  });
  const timeline = judgeRun(run, { names: allIds, cluster, faults: [], watchSeesEveryChange: from.watchSeesEveryChange && to.watchSeesEveryChange, timing: ROLLING_TIMING });
  const count = (of: 'election' | 'lock', phase?: Phase) =>
    timeline.incarnations.filter((r) => phase === undefined || started.get(describeHolder(r)) === phase).flatMap((r) => termsOf(r, of, timeline.endedAt)).length;
  const byPhase = Object.fromEntries((['from', 'migrate', 'to'] as const).map((p) => [p, { terms: count('election', p), lockHolds: count('lock', p) }])) as Record<Phase, { terms: number; lockHolds: number }>;
  return {
    violations,
    timeline,
    workDir,
    counts: { terms: count('election'), lockHolds: count('lock'), byPhase, restarts: timeline.incarnations.length - restartsBefore, writesAccepted: resource.writes.filter((w) => w.accepted).length },
  };
}

/** Resolves once every running candidate's view holds every id; returns the checkpoint, or what was missing at the bound. */
export async function everyViewHoldsAll(cluster: SoakCluster, ids: readonly string[], timeoutMs: number): Promise<string[]> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const checkpoint = cluster.checkpoint();
    const views = await Promise.all(cluster.live().map(async (p) => ({ p, view: await p.event('members', ANSWER_BOUND_MS, (e) => e.checkpoint === checkpoint) })));
    const missing = views.flatMap(({ p, view }) => {
      const seen = new Set(view.members.map((m) => m.id));
      const absent = ids.filter((id) => !seen.has(id));
      return absent.length ? [`${p.describe()} misses ${absent.join(', ')}`] : [];
    });
    if (missing.length === 0) return [];
    if (performance.now() > deadline) return missing;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * How soon a member's successor must follow its removal in a view: the
 * successor's record is created right after the earlier one is removed (one
 * compare-and-set delete, one create), so an observer sees both within a watch
 * delivery or two. Milliseconds.
 */
const REPLACED_BOUND_MS = 5000;

/**
 * Members must stay in every view throughout: from the moment every view first
 * held them all until the run's end began, a member may change incarnation —
 * its successor process announces it anew, so an observer sees the earlier
 * incarnation `removed` and the new one `added` (an `updated` never spans two)
 * — but never leave: each removal is followed by the same id's `added` in the
 * same view within REPLACED_BOUND_MS, and every checkpoint view holds every id.
 */
export function membersKept(timeline: Timeline, ids: readonly string[], from: number, until: number): string[] {
  const found: string[] = [];
  const at = (t: number) => `+${((t - timeline.startedAt) / 1000).toFixed(3)} s`;
  for (const record of timeline.incarnations) {
    const events = record.events as CandidateEvent[];
    // An observer stopped (handed off and killed) before the successor's add reached it cannot be asked to see it.
    const observedUntil = Math.min(record.shutdownAt ?? Infinity, record.killedAt ?? Infinity, record.exitedAt ?? Infinity, timeline.endedAt);
    for (const e of events) {
      if (e.t < from || e.t > until) continue;
      if (e.type === 'memberRemoved') {
        const back = events.find((a) => a.type === 'memberAdded' && a.id === e.id && a.n > e.n);
        const missed = back ? back.t - e.t > REPLACED_BOUND_MS : observedUntil - e.t >= REPLACED_BOUND_MS;
        if (missed) {
          found.push(`a member left a view during the migration: ${describeHolder(record)} saw ${e.id} removed (${e.reason}) at ${at(e.t)}${back ? `, added again only ${((back.t - e.t) / 1000).toFixed(3)} s later` : ', never added again'}`);
        }
      }
      if (e.type === 'members') {
        const seen = new Set(e.members.map((m) => m.id));
        const absent = ids.filter((id) => !seen.has(id));
        if (absent.length) found.push(`a member missing from a view during the migration: ${describeHolder(record)} at checkpoint ${e.checkpoint} (${at(e.t)}) lacks ${absent.join(', ')}`);
      }
    }
  }
  return found;
}

/**
 * A rolling restart `from` → migrate(from→to) → `to`, one process at a time,
 * while every process campaigns in one election, contends for one lock, writes
 * through the fenced resource and heartbeats its members. Each step, as a
 * Deployment's rolling update with a surge of one: the process hands off
 * (resigns, releases the lock, heartbeats on), its successor starts under the
 * same name in the next phase and takes its members over, then the old one is
 * SIGKILLed; the members are never removed, however slow the start.
 * Judged by the soak's verdict (one leader at every instant, rising tokens, no
 * stale write, no lost or phantom member event) and by {@link membersKept}.
 */
export async function runRollingRestart(options: MigrationRunOptions): Promise<MigrationRunResult> {
  const log = options.log ?? (() => {});
  let keptFrom = Infinity;
  let keptUntil = Infinity;
  let ids: string[] = [];
  const result = await withMigrationCluster(options, 'from', async (cluster, phases, allIds, violations) => {
    ids = allIds;
    const missing = await everyViewHoldsAll(cluster, allIds, VIEWS_BOUND_MS);
    if (missing.length) throw new Error(`the members never reached every view: ${missing.join('; ')}`);
    keptFrom = monotonicMs();
    for (const phase of ['migrate', 'to'] as const) {
      for (const name of cluster.names) {
        // As a Deployment's rolling update with a surge of one: the new process is up before the old one goes.
        const old = cluster.current(name);
        old.send({ op: 'handoff' });
        await old.event('handedOff', ANSWER_BOUND_MS);
        phases.set(name, phase);
        await cluster.restart(name);
        await old.kill();
        await cluster.waitForLeader(LEADER_BOUND_MS);
        await new Promise((resolve) => setTimeout(resolve, WORK_MS)); // the new leader works a while: not a synchronisation
        cluster.checkpoint();
        log(`${options.from}→${options.to}: ${name} now ${phase}`);
      }
    }
    violations.push(...(await everyViewHoldsAll(cluster, allIds, VIEWS_BOUND_MS)).map((m) => `lost member at the end: ${m}`));
    keptUntil = monotonicMs();
  });
  result.violations.push(...membersKept(result.timeline, ids, keptFrom, keptUntil));
  return result;
}

/**
 * Every process migrating; the leader's connection to `to` alone is cut
 * (blackholed at its proxy). It must step down, `elected` → `lost`, within its
 * renew deadline and a request timeout, though `from` still answers it; another
 * process then leads. Returns also how long the step-down took.
 */
export async function runMigratingLeaderLosesTo(options: MigrationRunOptions): Promise<MigrationRunResult & { stepDownMs: number | undefined }> {
  let stepDownMs: number | undefined;
  const result = await withMigrationCluster({ ...options, processes: options.processes ?? 3, members: options.members ?? 3 }, 'migrate', async (cluster, _phases, _ids, violations) => {
    const leader = cluster.leader!;
    const proxy = cluster.proxyOf(leader.name, options.to);
    const cutAt = monotonicMs();
    proxy.cut('blackhole');
    try {
      const lost = await leader.process.event('lost', ROLLING_TIMING.election.leaseDurationMs + ANSWER_BOUND_MS, (e) => e.token === leader.token);
      stepDownMs = lost.t - cutAt;
      const bound = ROLLING_TIMING.election.renewDeadlineMs + ROLLING_TIMING.requestTimeoutMs;
      if (stepDownMs > bound) violations.push(`the leader stepped down ${stepDownMs.toFixed(0)} ms after its to was cut, beyond its renew deadline plus a request timeout (${bound} ms)`);
      if (lost.reason !== 'renew-deadline') violations.push(`the leader stepped down for ${lost.reason}, not at its renew deadline`);
      await cluster.waitForLeader(LEADER_BOUND_MS);
      if (cluster.leader!.process === leader.process) violations.push('the leader cut off from to led again while cut off');
    } finally {
      proxy.heal();
    }
    await new Promise((resolve) => setTimeout(resolve, WORK_MS)); // the new leader works a while
  });
  return { ...result, stepDownMs };
}
