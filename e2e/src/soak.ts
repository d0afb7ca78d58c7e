import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { soakBackend, type BackendName } from './backends.js';
import { SoakCluster, type SoakTiming } from './cluster.js';
import { FencedResource } from './fenced-resource.js';
import { judgeRun, runCluster, type ClusterRun } from './run-cluster.js';
import { applyFault, faultsFor, FaultSchedule, POD_FAULT_KINDS, type FaultKind, type FaultRecord } from './faults.js';
import { CandidatePods, PROBE_PORT } from './candidate-pods.js';
import { figures, type Figures } from './figures.js';
import type { Timeline } from './timeline.js';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';

/** The conformance suite's short timings: many terms per minute, and a 500 ms margin between renew deadline and lease. */
export const SOAK_TIMING: Readonly<SoakTiming> = Object.freeze({
  election: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 },
  lock: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 },
  member: { heartbeatIntervalMs: 400, leaseDurationMs: 2000 },
  requestTimeoutMs: 1000,
});

export interface SoakOptions {
  backend: BackendName;
  /** Candidate processes. Default 3. */
  candidates?: number;
  /** Stop once this many election terms have begun. Default: no bound (give durationMs). */
  terms?: number;
  /** Stop after this long, milliseconds. Default: no bound (give terms). */
  durationMs?: number;
  /** Go on at least until every fault kind has been applied this many times over (a full round of the schedule). Default 1. */
  rounds?: number;
  /** Progress lines. Default: none. */
  log?: (line: string) => void;
  /**
   * Run the candidates as pods on the real node, in pod liveness
   * (`registry.member.liveness=pod`; see candidate-pods.ts), with the faults of
   * {@link POD_FAULT_KINDS}; kubernetes only, on an instance with a real node.
   * Default false: child processes of this one.
   */
  inPods?: boolean;
}

export interface SoakResult {
  /** Empty when the run passed. */
  violations: string[];
  /** The fault kinds the run applied. */
  kinds: FaultKind[];
  figures: Figures;
  timeline: Timeline;
  /** Candidate logs (`<name>-<incarnation>.log`) and `timeline.json`. */
  workDir: string;
}

/** Bound on a leader emerging after a fault, milliseconds: the lease, a server restart, a slow start, with room. */
const LEADER_BOUND_MS = 60_000;
/** Bound on the member views agreeing once updates stop, milliseconds: a member lease and a watch restart, with room. */
const CONVERGE_BOUND_MS = 30_000;

/**
 * One chaos soak on one backend: candidates campaign, lock, announce and write
 * through the fenced resource while faults hit them one after another; at the
 * end the member views must agree, and the merged timeline is judged.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  if (options.terms === undefined && options.durationMs === undefined) throw new Error('runSoak needs terms or durationMs');
  const backend = soakBackend(options.backend);
  if (options.inPods && backend.name !== 'kubernetes') throw new Error(`runSoak: candidates run in pods on kubernetes only, not ${backend.name}`);
  const timing = SOAK_TIMING;
  const kinds = faultsFor(backend).filter((kind) => !options.inPods || POD_FAULT_KINDS.includes(kind));
  const workDir = mkdtempSync(join(tmpdir(), `rollcall-soak-${backend.name}${options.inPods ? '-pods' : ''}-`));
  const log = options.log ?? (() => {});
  const pods = options.inPods ? await CandidatePods.start(workDir) : undefined;
  const startedAt = monotonicMs();
  const resource = await FencedResource.start({ path: pods?.resourcePath }).catch(async (err: unknown) => {
    await pods?.close();
    throw err;
  });
  const faults: FaultRecord[] = [];
  const violations: string[] = [];
  const run: ClusterRun = { resource, workDir, startedAt, violations };
  const start = () =>
    SoakCluster.start({
      backend,
      size: options.candidates ?? 3,
      cluster: `soak-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`,
      workDir,
      resourceUrl: resource.url,
      timing,
      runner: pods,
      placement: pods?.placement,
      probePort: pods && PROBE_PORT,
    });
  const cluster = await runCluster(run, start, async (cluster) => {
    log(`${backend.name}: ${cluster.names.length} candidates up; faults: ${kinds.join(', ')}`);
    await cluster.waitForLeader(LEADER_BOUND_MS);
    const schedule = new FaultSchedule(kinds);
    const done = () =>
      schedule.rounds >= (options.rounds ?? 1) && ((options.terms !== undefined && cluster!.terms >= options.terms) || (options.durationMs !== undefined && monotonicMs() - startedAt >= options.durationMs));
    while (!done()) {
      // The leader may have stepped down since (a server restart's late effect): aim at the one there is now.
      await cluster.waitForLeader(LEADER_BOUND_MS);
      const fault = await applyFault(schedule.next(), cluster, backend, timing.election.leaseDurationMs);
      faults.push(fault);
      try {
        await cluster.waitForLeader(LEADER_BOUND_MS);
      } catch {
        violations.push(`no leader within ${LEADER_BOUND_MS} ms after ${fault.kind} of ${fault.target ?? 'the server'} at +${((fault.at - startedAt) / 1000).toFixed(3)} s`);
        break;
      }
      // Let the new leader write and the lock change hands before the next fault.
      await new Promise((resolve) => setTimeout(resolve, 200 + Math.random() * 600));
      cluster.checkpoint();
      if (faults.length % 10 === 0) log(`${backend.name}: ${faults.length} faults, ${cluster.terms} terms, ${((monotonicMs() - startedAt) / 1000).toFixed(0)} s`);
    }
    if (violations.length === 0) violations.push(...(await cluster.converge(CONVERGE_BOUND_MS)));
  });
  // Every ended container's exit read from its pod before the verdict.
  await pods?.close();
  const podReadiness = pods && Object.fromEntries(pods.readiness);
  const timeline = judgeRun(run, { names: cluster?.names ?? [], cluster, faults, watchSeesEveryChange: backend.watchSeesEveryChange, timing, podReadiness });
  return { violations, kinds, figures: figures(backend.name, timeline.names.length, timeline, violations.length), timeline, workDir };
}
