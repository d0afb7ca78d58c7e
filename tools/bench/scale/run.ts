import { loadavg } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { monotonicMs } from '../../testenv/measure/monotonic.js';
import { summarize } from '../../testenv/measure/stats.js';
import { up } from '../../testenv/index.js';
import { BACKENDS } from '../backends/index.js';
import type { KubernetesTarget } from '../backends/kubernetes.js';
import type { BenchTarget } from '../target.js';
import { benchCluster, WAIT_BOUND_MS } from '../timing.js';
import type { BenchMember, ScaleBackend, ScaleOptions } from './args.js';
import { latency, requestRates, seenByEvery, watchRates } from './aggregate.js';
import { EventBook } from './event-book.js';
import { planCluster, type ClusterPlan } from './plan.js';
import { ScalePods } from './pods.js';
import { coresBetween, sampleProcesses } from './proc.js';
import { MASTER_ROLE, type WorkerStatus } from './protocol.js';
import { memberFields, seriesName, type ScaleRow } from './results.js';
import { requestWindow, sampleServer, SERVER_UNITS } from './server.js';
import { startWorker, type WorkerProcess } from './worker-process.js';

/** Bound on a worker process loading the backend: several load at once, on a busy machine. */
const START_BOUND_MS = 120_000;
/** Registries each worker process opens at once. */
const OPEN_CONCURRENCY = 8;
/** Bound on opening N registries: a minute, and 100 ms more per member. */
const openBoundMs = (n: number) => 60_000 + 100 * n;
/** Bound on every master seeing every worker and every election having a leader, once open. */
const SETTLE_BOUND_MS = 120_000;
/** A crashed member is removed after its lease; this much more is allowed before it counts as saturation. */
const CRASH_SLACK_MS = 30_000;
/** How long the server's CPU is read with no simulated process, before a backend's first size. */
const IDLE_MS = 10_000;

type Progress = (line: string) => void;

/** The worker processes of one size, and what they report. */
class Fleet {
  readonly book = new EventBook();
  readonly main: WorkerProcess[] = [];
  readonly crash: WorkerProcess[] = [];
  /** Which worker process hosts each simulated process. */
  readonly host = new Map<string, WorkerProcess>();

  async start(backend: ScaleBackend, plan: ClusterPlan): Promise<void> {
    const onEvent = this.book.record.bind(this.book);
    const started = await Promise.allSettled([
      ...plan.processes.map((_, i) => startWorker(`worker ${i}`, backend, onEvent, START_BOUND_MS)),
      ...plan.crashes.map((_, j) => startWorker(`crash ${j}`, backend, onEvent, START_BOUND_MS)),
    ]);
    const failure = started.find((s) => s.status === 'rejected');
    const workers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    this.main.push(...workers.slice(0, plan.processes.length));
    this.crash.push(...workers.slice(plan.processes.length));
    if (failure) throw (failure as PromiseRejectedResult).reason;
    plan.processes.forEach((sims, i) => sims.forEach((s) => this.host.set(s.id, this.main[i]!)));
    plan.crashes.forEach((sims, j) => sims.forEach((s) => this.host.set(s.id, this.crash[j]!)));
  }

  /** Each worker's status; undefined for one that did not answer in time (its event loop saturated), named in `late`. */
  async statuses(workers: readonly WorkerProcess[], gc = false): Promise<{ statuses: (WorkerStatus | undefined)[]; late: string[] }> {
    const settled = await Promise.allSettled(workers.map((w) => w.request<WorkerStatus>({ op: 'status', gc }, WAIT_BOUND_MS)));
    return {
      statuses: settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined)),
      late: settled.flatMap((s) => (s.status === 'rejected' ? [message(s.reason)] : [])),
    };
  }

  /** Closes every registry (bounded), then ends every process. */
  async stop(): Promise<void> {
    const all = [...this.main, ...this.crash];
    await Promise.allSettled(all.filter((w) => w.alive).map((w) => w.request({ op: 'close' }, WAIT_BOUND_MS)));
    all.forEach((w) => w.signal('SIGKILL'));
    await Promise.all(all.map((w) => w.exitedWithin(WAIT_BOUND_MS)));
  }
}

/** Runs `steps` at evenly spread moments of the `windowMs` from now, all concurrently. */
function spread<T>(count: number, windowMs: number, step: (i: number) => Promise<T>): Promise<PromiseSettledResult<T>[]> {
  return Promise.allSettled(
    Array.from({ length: count }, async (_, i) => {
      await delay(((i + 0.5) * windowMs) / count); // a schedule, not a wait for an event
      return step(i);
    }),
  );
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The 1-minute load average now: the machine is shared, so each row says how busy it was. */
const load1 = () => loadavg()[0]!;

/**
 * One backend with one member setting at one size: bring N simulated processes up, let them settle, measure a window, tear down.
 * With `pods` (liveness pod), each member gets a kwok pod first, and a crash turns its pods not Ready.
 */
async function measureSize(backend: ScaleBackend, member: BenchMember, target: BenchTarget, idleCores: number, n: number, options: ScaleOptions, progress: Progress, pods?: ScalePods): Promise<ScaleRow> {
  const plan = planCluster(n, options);
  const cluster = benchCluster('scale');
  const fleet = new Fleet();
  const saturated: string[] = [];
  const fields = rowFields(member, n);
  const say = (line: string) => progress(`${seriesName({ backend, ...fields, members: n })} N=${n}: ${line}`);
  try {
    if (pods) {
      say(`creating ${n} kwok pods, one per member, and waiting for each to be Ready in its role's Service`);
      const made = Date.now();
      await pods.create(cluster, [...plan.processes.flat(), ...plan.crashes.flat()]);
      say(`${n} pods Ready in ${Math.round((Date.now() - made) / 1000)} s`);
    }
    say(`starting ${plan.processes.length} worker processes and ${plan.crashes.length} to crash`);
    await fleet.start(backend, plan);
    // after a collection, as the RSS after the window is read: loading's garbage made it negative at small N
    await fleet.statuses(fleet.main, true);
    const empty = sampleProcesses(fleet.main.map((w) => w.pid));

    // N, or at N = 0 the elections' candidates
    const simulatedCount = [...plan.processes, ...plan.crashes].reduce((sum, p) => sum + p.length, 0);
    say(`opening ${simulatedCount} registries (${plan.masters.length} masters, ${n - plan.masters.length} workers), ${plan.elections.length} elections`);
    const backendConfig = (await target.processConfig?.()) ?? target.backendConfig(0);
    const opening = Date.now();
    const opened = await Promise.allSettled(
      [...plan.processes, ...plan.crashes].map((processes, i) =>
        [...fleet.main, ...fleet.crash][i]!.request<WorkerStatus>({ op: 'open', backend: backendConfig, cluster, member, processes, concurrency: OPEN_CONCURRENCY }, openBoundMs(n)),
      ),
    );
    const everyone = [...fleet.main, ...fleet.crash];
    let { statuses } = await fleet.statuses(everyone);
    const open = statuses.reduce((sum, s) => sum + (s?.opened ?? 0), 0);
    const failed = statuses.reduce((sum, s) => sum + (s?.failed ?? 0), 0);
    if (opened.some((o) => o.status === 'rejected') || open < simulatedCount) {
      saturated.push(`opening: ${open} of ${simulatedCount} registries open after ${Math.round((Date.now() - opening) / 1000)} s (${failed} failed: ${statuses.flatMap((s) => s?.errors ?? []).slice(0, 2).join('; ') || 'still opening'})`);
    }
    const each = statuses.flatMap((s) => s?.openMs ?? []);
    const eachOpen = each.length > 0 ? `, each ${summarize(each).p50.toFixed(0)} ms p50, ${summarize(each).max.toFixed(0)} ms max` : '';
    say(`${open} open in ${Math.round((Date.now() - opening) / 1000)} s${eachOpen}; waiting for every master to see every worker and every election to have a leader`);
    // the workers that opened: one that failed is in the opening's saturation already
    const workersExpected = statuses.reduce((sum, s) => sum + (s?.openedWorkers ?? 0), 0);
    // a worker that did not answer counts as seeing none
    const seenLeast = (all: (WorkerStatus | undefined)[]) => (all.includes(undefined) ? 0 : Math.min(...all.flatMap((s) => Object.values(s!.seen))));
    try {
      await fleet.book.until(() => (fleet.book.leaders.size === plan.elections.length ? true : undefined), SETTLE_BOUND_MS, `a leader in each of ${plan.elections.length} elections`);
      const settleBy = Date.now() + SETTLE_BOUND_MS;
      for (; seenLeast(statuses) < workersExpected; statuses = (await fleet.statuses(everyone)).statuses) {
        if (Date.now() > settleBy) throw new Error(`every master to see ${workersExpected} workers`);
        await delay(500); // poll interval of the worker processes' counts
      }
    } catch (err) {
      saturated.push(
        `settling: ${fleet.book.leaders.size} of ${plan.elections.length} elections led, masters see at least ${seenLeast(statuses)} of ${workersExpected} workers (${message(err)})`,
      );
    }

    // the elections-only baseline has no master to see an announce
    const announceCount = plan.masters.length > 0 ? options.announces : 0;
    say(`window of ${options.seconds} s: ${announceCount} announces, ${plan.crashes.length} crashes, ${options.handovers} handovers`);
    const requests = requestWindow(backend, target);
    const stopRequests = await requests.start();
    const windowMs = options.seconds * 1000;
    const t0 = monotonicMs();
    const loadBefore = load1();
    const serverBefore = sampleServer(backend);
    const workersBefore = sampleProcesses(fleet.main.map((w) => w.pid));
    const before = await fleet.statuses(fleet.main);

    const announces = spread(announceCount, windowMs, async (i) => {
      const process = plan.workers[(i * 7) % plan.workers.length]!;
      const member = `probe-${i}`;
      const { at } = await fleet.host.get(process)!.request<{ at: number }>({ op: 'announce', process, member }, WAIT_BOUND_MS);
      const took = await fleet.book.until(() => seenByEvery(at, fleet.book.added.get(member), plan.masters), WAIT_BOUND_MS, `every master to see ${member}`);
      await fleet.host.get(process)!.request({ op: 'withdraw', process, member }, WAIT_BOUND_MS);
      return took;
    });
    // kills in the first half of the window, so each removal is due inside it or soon after
    const crashes = spread(plan.crashes.length, windowMs / 2, async (j) => {
      const victim = fleet.crash[j]!;
      const members = plan.crashes[j]!.map((s) => s.id);
      let at = monotonicMs();
      victim.signal('SIGKILL');
      // in pod mode the kubelet's report ends a member, not its lease: timed from the pods turning not Ready
      if (pods) {
        at = monotonicMs();
        await pods.notReady(cluster, members);
      }
      const bound = (pods ? 0 : member.leaseDurationMs) + CRASH_SLACK_MS;
      const removed = await Promise.all(members.map((m) => fleet.book.until(() => seenByEvery(at, fleet.book.removed.get(m), plan.masters), bound, `every master to see ${m} removed after its ${pods ? 'pod turned not Ready' : 'process was killed'}`)));
      await pods?.delete(cluster, members);
      return removed;
    });
    const handovers = spread(plan.elections.length > 0 ? options.handovers : 0, windowMs, async (h) => {
      const election = plan.elections[h % plan.elections.length]!;
      const leader = fleet.book.leaders.get(election);
      if (!leader) throw new Error(`${election} has no leader to hand over`);
      const { at } = await fleet.host.get(leader)!.request<{ at: number }>({ op: 'resign', process: leader, election }, WAIT_BOUND_MS);
      const next = await fleet.book.until(() => fleet.book.elected.find((e) => e.election === election && e.process !== leader && e.at >= at), WAIT_BOUND_MS, `a new leader of ${election}`);
      await fleet.host.get(leader)!.request({ op: 'campaign', process: leader, election }, WAIT_BOUND_MS);
      return next.at - at;
    });
    const [announced, crashed, handedOver] = await Promise.all([announces, crashes, handovers, delay(windowMs)]);

    const seconds = (monotonicMs() - t0) / 1000;
    const loadAfter = load1();
    const serverAfter = sampleServer(backend);
    const workersAfter = sampleProcesses(fleet.main.map((w) => w.pid));
    // RSS after a collection in each worker, as the empty RSS was read
    const after = await fleet.statuses(fleet.main, true);
    const rssAfter = sampleProcesses(fleet.main.map((w) => w.pid)).rssBytes;
    for (const late of [...before.late, ...after.late]) saturated.push(`a worker process did not report its counts: ${late}`);
    // watch events of the worker processes that answered both times, divided among what they host
    const answered = fleet.main.flatMap((_, i) => (before.statuses[i] && after.statuses[i] ? [i] : []));
    const masters = (i: number) => plan.processes[i]!.filter((s) => s.role === MASTER_ROLE).length;
    const counted = await stopRequests();
    const hosted = plan.processes.reduce((sum, p) => sum + p.length, 0);
    const samples = <T>(settled: PromiseSettledResult<T>[], what: string): T[] => {
      const failures = settled.flatMap((s) => (s.status === 'rejected' ? [message(s.reason)] : []));
      if (failures.length > 0) saturated.push(`${what}: ${failures.length} of ${settled.length} did not complete (${failures[0]})`);
      return settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    };
    return {
      backend,
      ...fields,
      members: n,
      opened: open,
      windowSeconds: seconds,
      saturated,
      load: { before: loadBefore, after: loadAfter },
      server: { units: SERVER_UNITS[backend], cores: coresBetween(serverBefore, serverAfter, seconds), idleCores, rssBytes: serverAfter.rssBytes },
      requests: { source: requests.source, ...requestRates(counted, seconds) },
      watch: watchRates(
        answered.map((i) => before.statuses[i]!.watch),
        answered.map((i) => after.statuses[i]!.watch),
        seconds,
        {
          master: answered.reduce((sum, i) => sum + masters(i), 0),
          worker: answered.reduce((sum, i) => sum + plan.processes[i]!.length - masters(i), 0),
        },
      ),
      perMember: { cores: coresBetween(workersBefore, workersAfter, seconds) / hosted, rssBytes: (rssAfter - empty.rssBytes) / hosted, hosted },
      announce: latency(samples(announced, 'announce → seen'), announceCount),
      crash: latency(samples(crashed, 'crash → removed').flat(), plan.crashes.length * options.crashMembers),
      handover: latency(samples(handedOver, 'handover'), plan.elections.length > 0 ? options.handovers : 0),
    };
  } finally {
    say('closing');
    await fleet.stop();
    // the figures are measured by now: a cleanup that fails is said, not made the size's failure
    await pods?.clear(cluster, n).catch((err: unknown) => say(`the pods were not all deleted: ${message(err)}`));
  }
}

/** What a row records of its member setting: none for the elections-only baseline (N = 0), which has no member. */
const rowFields = (member: BenchMember, n: number) => (n === 0 ? {} : memberFields(member));

/** The server's own CPU with no simulated process: its control loops (for Kubernetes, the other controllers and kwok too). */
async function idleServerCores(backend: ScaleBackend): Promise<number> {
  const before = sampleServer(backend);
  const t0 = monotonicMs();
  await delay(IDLE_MS); // the measurement period itself
  return coresBetween(before, sampleServer(backend), (monotonicMs() - t0) / 1000);
}

/**
 * Runs the scale benchmark: for each size N, each backend in turn (so they do
 * not compete for the machine), side by side in the results. A backend that
 * saturated at one size is not run at the larger ones.
 */
export async function runScale(options: ScaleOptions, progress: Progress): Promise<ScaleRow[]> {
  const servers = [...new Set(options.backends.flatMap((b) => BACKENDS[b].servers))];
  progress(`bringing up ${servers.join(', ')}`);
  await up(servers);
  const targets = new Map<ScaleBackend, BenchTarget>();
  const rows: ScaleRow[] = [];
  /** By series (backend and member setting). */
  const saturatedAt = new Map<string, number>();
  const idle = new Map<ScaleBackend, number>();
  const podsOf = new Map<ScaleBackend, ScalePods>();
  const none = { attempted: 0 };
  const settings = options.liveness.flatMap((liveness) => options.memberTimings.map((timing): BenchMember => ({ liveness, ...timing })));
  try {
    for (const n of options.members) {
      for (const backend of options.backends) {
        // the elections-only baseline has no member, so no member setting: run once
        for (const member of n === 0 ? settings.slice(0, 1) : settings) {
          const fields = rowFields(member, n);
          const series = seriesName({ backend, ...fields, members: n });
          const smaller = saturatedAt.get(series);
          if (smaller !== undefined) {
            rows.push({ backend, ...fields, members: n, opened: 0, windowSeconds: 0, saturated: [], skipped: `saturated at N = ${smaller}`, announce: none, crash: none, handover: none });
            continue;
          }
          let target = targets.get(backend);
          if (!target) {
            targets.set(backend, (target = await BACKENDS[backend].prepare()));
            progress(`${backend}: the server's CPU for ${IDLE_MS / 1000} s with no simulated process`);
            idle.set(backend, await idleServerCores(backend));
          }
          let pods: ScalePods | undefined;
          if (member.liveness === 'pod' && n > 0) {
            pods = podsOf.get(backend) ?? new ScalePods(target as KubernetesTarget);
            podsOf.set(backend, pods);
          }
          // a size the harness could not run is reported as failed, not saturated, and the run goes on
          const row = await measureSize(backend, member, target, idle.get(backend)!, n, options, progress, pods).catch(
            (err: unknown): ScaleRow => ({ backend, ...fields, members: n, opened: 0, windowSeconds: 0, saturated: [], failed: message(err), announce: none, crash: none, handover: none }),
          );
          if (row.saturated.length > 0) saturatedAt.set(series, n);
          else if (row.failed) progress(`${series} N=${n}: failed: ${row.failed}`);
          rows.push(row);
        }
      }
    }
    return rows;
  } finally {
    await Promise.allSettled([...targets.values()].map((t) => t.close()));
  }
}
