import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import { soakBackend, type BackendName } from './backends.js';
import type { CandidateRunner } from './candidate-handle.js';
import { CandidateProcess } from './candidate-process.js';
import { SoakCluster } from './cluster.js';
import { FencedResource } from './fenced-resource.js';
import { oldRelease, type OldRelease } from './old-release.js';
import { SPEC_VARIABLE, type CandidateEvent, type CandidateSpec } from './protocol.js';
import { failoverOnce, liveMembersStay, updatesAcrossWriters, updatesWithinIncarnation, writerOf, type ExpectedFailover } from './release-rolling-verdict.js';
import { everyViewHoldsAll, membersKept, ROLLING_TIMING } from './rolling-restart.js';
import { judgeRun, runCluster, type ClusterRun } from './run-cluster.js';
import type { Timeline } from './timeline.js';

export interface ReleaseRollingOptions {
  backend: BackendName;
  /** Candidate processes. Default 4. */
  processes?: number;
  /** Members heartbeating in all, spread over the processes. Default 12. */
  members?: number;
  log?: (line: string) => void;
}

export interface ReleaseRollingResult {
  /** Empty when the run passed. */
  violations: string[];
  timeline: Timeline;
  workDir: string;
  old: OldRelease;
  /**
   * Restarts made; failover handlers started (and of those, of members written by the release before incarnations);
   * election terms begun by processes of each release; updates a view saw from an earlier process than the member's
   * last writer (an old predecessor taking its successor's record back); announces of this release refused
   * ALREADY_EXISTS and retried (a predecessor writing its record back); writes the resource accepted.
   */
  counts: { restarts: number; failovers: number; legacyFailovers: number; termsOld: number; termsNew: number; takenBack: number; announceRefusals: number; writesAccepted: number };
}

/** Bound on a leader emerging after a step, milliseconds. */
const LEADER_BOUND_MS = 60_000;
/** Bound on a candidate answering a command, milliseconds. */
const ANSWER_BOUND_MS = 15_000;
/** Bound on every view holding every member, milliseconds. */
const VIEWS_BOUND_MS = 30_000;
/** Bound on the leader failing a replaced member over: a watch delivery and a claim, on a loaded machine. Milliseconds. */
const FAILOVER_BOUND_MS = 30_000;
/** How long the leader works between two steps, milliseconds: a few lock hand-overs, fenced writes and heartbeats. */
const WORK_MS = 1500;

/** The member ids: each process's own name and its share of the rest (`c1-m1`, …). */
function memberIds(names: readonly string[], total: number): Map<string, string[]> {
  const extra = new Map(names.map((n) => [n, [] as string[]]));
  for (let i = 0; i < total - names.length; i++) extra.get(names[i % names.length]!)!.push(`${names[i % names.length]}-m${Math.floor(i / names.length) + 1}`);
  return extra;
}

/**
 * The configuration as the old release takes it: without the keys added
 * since, which it refuses as unknown. ZooKeeper's `openAcl` (the old release
 * wrote open ACLs unasked; this one needs the opt-in) is the only one the
 * soak's sections use.
 */
function oldConfig(registry: CandidateSpec['registry']): CandidateSpec['registry'] {
  const { zookeeper, ...rest } = registry as CandidateSpec['registry'] & { zookeeper?: Record<string, unknown> };
  if (!zookeeper) return registry;
  const { openAcl: _new, ...section } = zookeeper;
  return { ...rest, zookeeper: section } as CandidateSpec['registry'];
}

/**
 * Each name's first process runs the release before incarnations (its own
 * soak candidate on its own packages); every later one this release's, running
 * `registry.failover` over the members' role.
 */
function releaseRunner(old: OldRelease): CandidateRunner {
  return {
    start: (spec, logFile, onEvent) =>
      Promise.resolve(
        spec.incarnation === 1
          ? new CandidateProcess({ ...spec, registry: oldConfig(spec.registry) } as CandidateSpec, logFile, onEvent, { entry: old.candidate, specVariable: SPEC_VARIABLE })
          : new CandidateProcess({ ...spec, failover: true } as CandidateSpec, logFile, onEvent),
      ),
  };
}

/**
 * A rolling update from the release before incarnations to this one, on one
 * backend, as the rolling-restart e2e rolls (a Deployment's update with a surge
 * of one): every process campaigns in one election, contends for one lock,
 * writes through the fenced resource and heartbeats its members; one at a
 * time, a process of the old release hands off, its successor of this release
 * starts under the same name and takes its members over, and the old one is
 * SIGKILLed. Then, every process on this release, one more such step on the
 * first name: its members' incarnations must be failed over once.
 *
 * Judged by the soak's verdict (one leader at every instant, rising tokens, no
 * stale write, no lost or phantom member event), by `membersKept` (no member
 * leaves a view), by {@link liveMembersStay} (no member of a process that runs
 * on is removed: a member that did not restart is never removed-then-added),
 * by {@link updatesWithinIncarnation} (this release's views never see an
 * `updated` span two incarnations) and by {@link failoverOnce} (no incarnation failed over twice, none of a
 * process that runs on, and the last step's failed over).
 */
export async function runReleaseRolling(options: ReleaseRollingOptions): Promise<ReleaseRollingResult> {
  const log = options.log ?? (() => {});
  const old = oldRelease();
  log(`old release ${old.commit.slice(0, 7)}: ${old.builtMs ? `built in ${old.builtMs.toFixed(0)} ms` : 'cached'} (${old.dir})`);
  const backend = soakBackend(options.backend);
  const processes = options.processes ?? 4;
  const workDir = mkdtempSync(join(tmpdir(), `rollcall-release-rolling-${backend.name}-`));
  const resource = await FencedResource.start();
  const names = Array.from({ length: processes }, (_, i) => `c${i + 1}`);
  const extra = memberIds(names, options.members ?? 12);
  const allIds = [...names, ...[...extra.values()].flat()];
  const run: ClusterRun = { resource, workDir, startedAt: monotonicMs(), violations: [] };
  let keptFrom = Infinity;
  let keptUntil = Infinity;
  const expected: ExpectedFailover[] = [];
  let restartsBefore = 0;
  const start = () =>
    SoakCluster.start({
      backend,
      size: processes,
      cluster: `release-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`,
      workDir,
      resourceUrl: resource.url,
      timing: ROLLING_TIMING,
      runner: releaseRunner(old),
      extraMembers: (name) => extra.get(name) ?? [],
    });
  /** One step: the running process of `name` hands off, its successor starts and takes its members over, the old one is SIGKILLed. */
  const step = async (cluster: SoakCluster, name: string) => {
    const before = cluster.current(name);
    before.send({ op: 'handoff' });
    await before.event('handedOff', ANSWER_BOUND_MS);
    try {
      await cluster.restart(name);
    } finally {
      // Also when the successor never got ready: the cluster kills only the current process of each name.
      await before.kill();
    }
    await cluster.waitForLeader(LEADER_BOUND_MS);
    await new Promise((resolve) => setTimeout(resolve, WORK_MS)); // the leader works a while: not a synchronisation
    cluster.checkpoint();
    log(`${backend.name}: ${name} now #${cluster.current(name).record.incarnation}`);
    return before;
  };
  const cluster = await runCluster(run, start, async (cluster) => {
    restartsBefore = cluster.records.length;
    await cluster.waitForLeader(LEADER_BOUND_MS);
    const missing = await everyViewHoldsAll(cluster, allIds, VIEWS_BOUND_MS);
    if (missing.length) throw new Error(`the members never reached every view: ${missing.join('; ')}`);
    keptFrom = monotonicMs();
    for (const name of names) await step(cluster, name);
    // Every process on this release: the first name once more, its members now failed over by whichever process leads.
    const [first] = names as [string];
    const replaced = await step(cluster, first);
    const ids = [first, ...(extra.get(first) ?? [])];
    expected.push(...ids.map((id) => ({ id, writer: replaced.record.incarnation })));
    await Promise.all(
      ids.map((id) =>
        waitFor(FAILOVER_BOUND_MS, () => acknowledged(cluster.records.flatMap((r) => r.events), id, replaced.record.incarnation)),
      ),
    ).catch((err: Error) => run.violations.push(`the last step's members were not all failed over: ${err.message}`));
    run.violations.push(...(await everyViewHoldsAll(cluster, allIds, VIEWS_BOUND_MS)).map((m) => `lost member at the end: ${m}`));
    keptUntil = monotonicMs();
  });
  const timeline = judgeRun(run, { names: allIds, cluster, faults: [], watchSeesEveryChange: backend.watchSeesEveryChange, timing: ROLLING_TIMING });
  run.violations.push(
    ...membersKept(timeline, allIds, keptFrom, keptUntil),
    ...liveMembersStay(timeline, keptFrom, keptUntil),
    ...updatesWithinIncarnation(timeline),
    ...failoverOnce(timeline, expected),
  );
  const failovers = timeline.incarnations.flatMap((r) => r.events.filter((e) => e.type === 'failoverStarted'));
  const terms = (oldRelease: boolean) => timeline.incarnations.filter((r) => (r.incarnation === 1) === oldRelease).flatMap((r) => r.events.filter((e) => e.type === 'elected')).length;
  return {
    violations: run.violations,
    timeline,
    workDir,
    old,
    counts: {
      restarts: timeline.incarnations.length - restartsBefore,
      failovers: failovers.length,
      legacyFailovers: failovers.filter((e) => writerOf(e.lastPayload) === 1).length,
      termsOld: terms(true),
      termsNew: terms(false),
      takenBack: updatesAcrossWriters(timeline),
      announceRefusals: timeline.incarnations.flatMap((r) => r.events.filter((e) => e.type === 'error' && e.where === 'announce' && e.code === 'ALREADY_EXISTS')).length,
      writesAccepted: resource.writes.filter((w) => w.accepted).length,
    },
  };
}

/** Whether a failover of `id`, as process incarnation `writer` last wrote it, was acknowledged. */
function acknowledged(events: readonly CandidateEvent[], id: string, writer: number): boolean {
  const keys = new Set(events.flatMap((e) => (e.type === 'failoverStarted' && e.id === id && writerOf(e.lastPayload) === writer ? [e.incarnation] : [])));
  return events.some((e) => e.type === 'failoverAcknowledged' && e.id === id && keys.has(e.incarnation));
}

/** Resolves once `holds()` is true (looked at every 100 ms); rejects after `timeoutMs`. */
async function waitFor(timeoutMs: number, holds: () => boolean): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!holds()) {
    if (performance.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
