import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import { soakBackend, type BackendName, type SoakBackend } from './backends.js';
import { between, hold, randomCutMode } from './faults.js';
import { ChaosCluster, type ChaosProcess } from './failover-cluster.js';
import { IncarnationResource } from './failover-resource.js';
import { CHAOS_FAULT_KINDS, judgeFailover, requiredFailovers, type ChaosFault, type ChaosFaultKind, type ChaosTimeline } from './failover-verdict.js';
import { SOAK_TIMING } from './soak.js';

export interface ChaosOptions {
  backend: BackendName;
  /** Worker processes, at least 3 (each round hits three at once). Default 3. */
  workers?: number;
  /** Leader processes, at least 2 (a successor must take over). Default 2. */
  leaders?: number;
  /** Fault kinds not to apply (see the test for the one it leaves out, and why). Default none. */
  without?: readonly ChaosFaultKind[];
  /** Rounds of faults (each kind once per round). Default 1. */
  rounds?: number;
  /** Go on with more rounds until this long has passed, milliseconds. Default: no bound (give rounds). */
  durationMs?: number;
  /** Progress lines. Default: none. */
  log?: (line: string) => void;
}

/** What one run counted. */
export interface ChaosFigures {
  backend: string;
  seconds: number;
  rounds: number;
  /** Faults applied, by kind. */
  applied: Partial<Record<ChaosFaultKind, number>>;
  /** Member incarnations whose failover was acknowledged; of those, how many a successor resumed. */
  failedOver: number;
  resumed: number;
  /** Worker writes the resource accepted and refused (a fenced incarnation's), leader fences it refused (a deposed leader's). */
  work: { accepted: number; refused: number };
  fencesRefused: number;
  /** From an incarnation's end (its `lost`, or its SIGKILL) to its acknowledgement, milliseconds: p50 and max. */
  endToAckMs: { p50: number; max: number } | undefined;
}

export interface ChaosResult {
  /** Empty when the run passed. */
  violations: string[];
  /** The fault kinds the backend supports (every one applied at least once per round). */
  kinds: ChaosFaultKind[];
  figures: ChaosFigures;
  timeline: ChaosTimeline;
  /** Process logs (`<name>-<start>.log`) and `timeline.json`. */
  workDir: string;
}

/** Bound on a leader emerging, and on every ended incarnation being failed over, after a fault, milliseconds. */
const FAILOVER_BOUND_MS = 60_000;
/** Bound on the leader's handler reaching its hold after the worker's SIGKILL: a member lease, with room. */
const HELD_BOUND_MS = 30_000;
/** Attempts at a leader fault per round: a handover between the hold and the removal hands the failover to another leader. */
const LEADER_FAULT_ATTEMPTS = 3;
const POLL_MS = 50;

/** The faults a backend supports: no connection to cut and no server to restart on sqlite. */
export function chaosFaultsFor(backend: SoakBackend): ChaosFaultKind[] {
  return CHAOS_FAULT_KINDS.filter((kind) => (kind === 'worker-cut' || kind === 'server-restart' ? backend.server() !== undefined : true));
}

/**
 * The failover chaos on one backend (issue 34 item 5): workers work on their
 * items under their member incarnations while a leader fails dead ones over;
 * per round, three workers at once are cut off past their lease (then healed),
 * SIGKILLed and SIGSTOPped past it; the leader is SIGKILLed, then SIGSTOPped,
 * inside its failover handler; the server restarts. After each step every ended
 * incarnation must be failed over within a bound; the merged timeline is judged
 * by {@link judgeFailover}.
 */
export async function runFailoverChaos(options: ChaosOptions): Promise<ChaosResult> {
  const backend = soakBackend(options.backend);
  const kinds = chaosFaultsFor(backend).filter((kind) => !options.without?.includes(kind));
  const timing = SOAK_TIMING;
  const workDir = mkdtempSync(join(tmpdir(), `rollcall-chaos-${backend.name}-`));
  const log = options.log ?? (() => {});
  const startedAt = monotonicMs();
  const resource = await IncarnationResource.start();
  const faults: ChaosFault[] = [];
  const violations: string[] = [];
  let cluster: ChaosCluster | undefined;
  let rounds = 0;
  try {
    cluster = await ChaosCluster.start({ backend, workers: Math.max(3, options.workers ?? 3), leaders: Math.max(2, options.leaders ?? 2), cluster: `chaos-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`, workDir, resourceUrl: resource.url, timing });
    const scenario = new Scenario(cluster, backend, kinds, faults);
    const endAt = options.durationMs === undefined ? undefined : startedAt + options.durationMs;
    while (rounds < (options.rounds ?? 1) || (endAt !== undefined && monotonicMs() < endAt)) {
      await scenario.round();
      rounds++;
      log(`${backend.name}: ${rounds} rounds, ${faults.length} faults, ${((monotonicMs() - startedAt) / 1000).toFixed(0)} s`);
    }
    // The workers withdraw first; whatever they lost before (a loss the last fault caused may come late) is failed over before the leaders stop.
    violations.push(...(await cluster.shutdown('worker')));
    await scenario.allFailedOver();
    violations.push(...(await cluster.shutdown('leader')));
  } catch (err) {
    violations.push(`the run could not go on: ${(err as Error).message}`);
    await cluster?.kill();
  } finally {
    await resource.close();
  }
  const timeline: ChaosTimeline = { processes: cluster?.records ?? [], work: resource.work, fences: resource.fences, faults, startedAt, endedAt: monotonicMs() };
  violations.push(...judgeFailover(timeline));
  writeFileSync(join(workDir, 'timeline.json'), JSON.stringify({ ...timeline, violations }));
  return { violations, kinds, figures: chaosFigures(backend.name, rounds, timeline), timeline, workDir };
}

/** One run's fault steps on its cluster. */
class Scenario {
  private readonly memberLeaseMs = SOAK_TIMING.member.leaseDurationMs;
  private readonly electionLeaseMs = SOAK_TIMING.election.leaseDurationMs;

  constructor(
    private readonly cluster: ChaosCluster,
    private readonly backend: SoakBackend,
    private readonly kinds: readonly ChaosFaultKind[],
    private readonly faults: ChaosFault[],
  ) {}

  async round(): Promise<void> {
    const [cut, killed, paused] = shuffle(this.cluster.workers);
    await this.waitForLeader();
    // Three workers at once: the leader fails each over while the others' faults go on.
    await Promise.all([this.kinds.includes('worker-cut') ? this.workerCut(cut!) : undefined, this.kinds.includes('worker-kill') ? this.workerKill(killed!) : undefined, this.kinds.includes('worker-pause') ? this.workerPause(paused!) : undefined]);
    await this.allFailedOver();
    for (const kind of (['leader-kill-in-handler', 'leader-pause-in-handler'] as const).filter((k) => this.kinds.includes(k))) {
      for (let attempt = 1; attempt <= LEADER_FAULT_ATTEMPTS && !(await this.leaderInHandler(kind)); attempt++);
      await this.allFailedOver();
    }
    if (this.kinds.includes('server-restart')) {
      const at = monotonicMs();
      await this.backend.restart!();
      this.record('server-restart', at, undefined);
      await this.allFailedOver();
    }
  }

  private async workerCut(name: string): Promise<void> {
    const incarnation = this.cluster.incarnationOf(name);
    const proxy = this.cluster.proxyOf(name);
    const at = monotonicMs();
    proxy.cut(randomCutMode());
    await hold(this.memberLeaseMs + between(500, 2000));
    proxy.heal();
    this.record('worker-cut', at, name, incarnation);
    await this.reannounced(name, incarnation);
  }

  private async workerKill(name: string): Promise<void> {
    const incarnation = this.cluster.incarnationOf(name);
    const at = monotonicMs();
    await this.cluster.current(name).kill();
    await hold(between(0, this.memberLeaseMs));
    await this.cluster.launch(name);
    this.record('worker-kill', at, name, incarnation);
  }

  private async workerPause(name: string): Promise<void> {
    const incarnation = this.cluster.incarnationOf(name);
    const process = this.cluster.current(name);
    const at = monotonicMs();
    process.pause();
    await hold(this.memberLeaseMs + between(500, 2500));
    process.resume();
    this.record('worker-pause', at, name, incarnation);
    await this.reannounced(name, incarnation);
  }

  /** Over when the worker has learnt it lost `incarnation` (past its lease) and announced a new one. */
  private async reannounced(name: string, incarnation: string | undefined): Promise<void> {
    await this.cluster.current(name).event('reannounced', FAILOVER_BOUND_MS, (e) => e.previous === incarnation);
  }

  /**
   * The leader told to hold its handler for a worker's incarnation, the worker
   * SIGKILLed (and restarted); once the handler holds (it has fenced), the
   * leader is SIGKILLed (and restarted) or SIGSTOPped past its election lease.
   * False when another leader took the failover (a handover in between).
   */
  private async leaderInHandler(kind: 'leader-kill-in-handler' | 'leader-pause-in-handler'): Promise<boolean> {
    await this.waitForLeader();
    const leader = this.cluster.leader!.process;
    const [victim] = shuffle(this.cluster.workers);
    const incarnation = this.cluster.incarnationOf(victim!);
    if (incarnation === undefined) return false;
    leader.send({ op: 'hold', incarnation });
    await this.workerKill(victim!);
    const held = () => leader.record.events.some((e) => e.type === 'held' && e.incarnation === incarnation);
    await this.until(() => held() || this.cluster.acknowledged(incarnation) || !leader.alive, HELD_BOUND_MS, `${leader.describe()} to hold its handler for ${victim} incarnation ${incarnation}`);
    if (!held()) return false;
    const at = monotonicMs();
    if (kind === 'leader-kill-in-handler') {
      await leader.kill();
      await hold(between(0, this.electionLeaseMs));
      await this.cluster.launch(leader.name);
    } else {
      leader.pause();
      await hold(this.electionLeaseMs + between(500, 2500));
      leader.resume();
    }
    this.record(kind, at, leader.name, incarnation);
    return true;
  }

  private record(kind: ChaosFaultKind, at: number, target: string | undefined, incarnation?: string): void {
    const leader = this.cluster.leader;
    this.faults.push({ kind, at, until: monotonicMs(), target, leader: leader && { name: leader.process.name, token: leader.token }, incarnation });
  }

  private waitForLeader(): Promise<void> {
    return this.until(() => isLeading(this.cluster.leader?.process), FAILOVER_BOUND_MS, 'a leader');
  }

  /** Every incarnation that must be failed over by now (see requiredFailovers) acknowledged by some leader. */
  allFailedOver(): Promise<void> {
    // One a leader recorded skipped will never be acknowledged: the verdict names it, the run goes on.
    const missing = () => requiredFailovers(this.cluster.records).filter((i) => !this.cluster.acknowledged(i) && !this.cluster.skipped(i));
    return this.until(() => missing().length === 0, FAILOVER_BOUND_MS, () => `failover of ${missing().join(', ')}`);
  }

  /** Resolves once `done()` holds, looked at every 50 ms; rejects after `timeoutMs`. */
  private async until(done: () => boolean, timeoutMs: number, what: string | (() => string)): Promise<void> {
    const deadline = monotonicMs() + timeoutMs;
    while (!done()) {
      if (monotonicMs() > deadline) throw new Error(`no ${typeof what === 'string' ? what : what()} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}

const isLeading = (p: ChaosProcess | undefined) => p !== undefined && p.alive && !p.stopped;

function shuffle<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** What a finished run counted. */
export function chaosFigures(backend: string, rounds: number, timeline: ChaosTimeline): ChaosFigures {
  const applied: Partial<Record<ChaosFaultKind, number>> = {};
  for (const f of timeline.faults) applied[f.kind] = (applied[f.kind] ?? 0) + 1;
  const events = timeline.processes.flatMap((p) => p.events.map((e) => ({ p, e })));
  const acks = new Map<string, number>();
  for (const { e } of events) if (e.type === 'acknowledged' && !acks.has(e.incarnation)) acks.set(e.incarnation, e.t);
  const resumed = new Set(events.flatMap(({ e }) => (e.type === 'failoverStarted' && e.resumed ? [e.incarnation] : [])));
  const ends = new Map<string, number>();
  for (const { p, e } of events) {
    if (e.type === 'memberLost' && !ends.has(e.incarnation)) ends.set(e.incarnation, e.t);
    if ((e.type === 'announced' || e.type === 'reannounced') && p.killedAt !== undefined) ends.set(e.incarnation, Math.min(ends.get(e.incarnation) ?? Infinity, p.killedAt));
  }
  const spans = [...acks].flatMap(([inc, t]) => (ends.has(inc) && ends.get(inc)! <= t ? [t - ends.get(inc)!] : [])).sort((a, b) => a - b);
  return {
    backend,
    seconds: Math.round((timeline.endedAt - timeline.startedAt) / 1000),
    rounds,
    applied,
    failedOver: acks.size,
    resumed: resumed.size,
    work: { accepted: timeline.work.filter((w) => w.accepted).length, refused: timeline.work.filter((w) => !w.accepted).length },
    fencesRefused: timeline.fences.filter((f) => !f.accepted).length,
    endToAckMs: spans.length === 0 ? undefined : { p50: Math.round(spans[Math.floor((spans.length - 1) / 2)]!), max: Math.round(spans.at(-1)!) },
  };
}

export function formatChaosFigures(f: ChaosFigures): string {
  const applied = Object.entries(f.applied).map(([k, n]) => `${k} ${n}`).join(', ');
  return [
    `${f.backend}: ${f.seconds} s, ${f.rounds} rounds; faults: ${applied}`,
    `failed over: ${f.failedOver} incarnations (${f.resumed} resumed by a successor); end → acknowledged p50 ${f.endToAckMs?.p50 ?? '–'} ms, max ${f.endToAckMs?.max ?? '–'} ms`,
    `worker writes: ${f.work.accepted} accepted, ${f.work.refused} refused (a fenced incarnation's); leader fences refused: ${f.fencesRefused}`,
  ].join('\n');
}
