import { join } from 'node:path';
import { packageFile } from '@rollcall/child-harness';
import { TcpProxy } from '@rollcall/tools/testenv';
import type { SoakBackend } from './backends.js';
import type { IncarnationRecord } from './candidate-handle.js';
import { CandidateProcess } from './candidate-process.js';
import type { SoakTiming } from './cluster.js';
import { CHAOS_SPEC_VARIABLE, type ChaosCommand, type ChaosEvent, type ChaosSpec } from './failover-protocol.js';

/** A process of the failover chaos, as the coordinator holds it. */
export type ChaosProcess = CandidateProcess<ChaosCommand, ChaosEvent>;

export interface ChaosClusterOptions {
  backend: SoakBackend;
  workers: number;
  leaders: number;
  /** The registry cluster the processes share, fresh per run. */
  cluster: string;
  /** Where process logs and the sqlite file go. */
  workDir: string;
  resourceUrl: string;
  timing: SoakTiming;
}

/** Bound on a process opening its registry and announcing itself, milliseconds (a server may be restarting). */
const READY_BOUND_MS = 90_000;
/** Bound on a process exiting when asked to, milliseconds. */
const SHUTDOWN_BOUND_MS = 15_000;

interface Slot {
  name: string;
  part: ChaosSpec['part'];
  proxy: TcpProxy | undefined;
  current: ChaosProcess;
  starts: number;
}

/** The compiled chaos process entry, found from this package's root so it works from `src` (tests) and from `dist`. */
function chaosEntry(): string {
  return packageFile(import.meta.url, '@rollcall/e2e', 'dist/failover-candidate.js', 'npx nx run @rollcall/e2e:build');
}

/**
 * The failover chaos's processes: workers `w1…` and leaders `m1…`, each behind
 * a TCP proxy of its own to the backend's server (so one can be cut off alone),
 * each restarted under the same name after a SIGKILL. Tracks the leader and
 * every worker's current member incarnation from the events as they arrive.
 */
export class ChaosCluster {
  /** Every process ever started, in start order. */
  readonly records: IncarnationRecord<ChaosEvent>[] = [];
  /** The election's leader by the events seen so far. */
  leader: { process: ChaosProcess; token: number } | undefined;
  private readonly slots = new Map<string, Slot>();

  private constructor(private readonly options: ChaosClusterOptions) {}

  static async start(options: ChaosClusterOptions): Promise<ChaosCluster> {
    const cluster = new ChaosCluster(options);
    const names = [...Array.from({ length: options.workers }, (_, i) => [`w${i + 1}`, 'worker'] as const), ...Array.from({ length: options.leaders }, (_, i) => [`m${i + 1}`, 'leader'] as const)];
    for (const [name, part] of names) {
      const server = options.backend.server();
      cluster.slots.set(name, { name, part, proxy: server && (await TcpProxy.start(server)), current: undefined!, starts: 0 });
    }
    try {
      await Promise.all(names.map(([name]) => cluster.launch(name)));
    } catch (err) {
      await cluster.kill();
      throw err;
    }
    return cluster;
  }

  get workers(): string[] {
    return [...this.slots.values()].filter((s) => s.part === 'worker').map((s) => s.name);
  }

  current(name: string): ChaosProcess {
    return this.slots.get(name)!.current;
  }

  proxyOf(name: string): TcpProxy {
    const proxy = this.slots.get(name)!.proxy;
    if (!proxy) throw new Error(`${name} has no proxy to cut`);
    return proxy;
  }

  /** The member incarnation `name`'s running process created last (announced or re-announced). */
  incarnationOf(name: string): string | undefined {
    const created = this.current(name).record.events.filter((e) => e.type === 'announced' || e.type === 'reannounced');
    const last = created.at(-1);
    return last && (last.type === 'announced' || last.type === 'reannounced') ? last.incarnation : undefined;
  }

  /** Whether some leader acknowledged the failover of `incarnation`. */
  acknowledged(incarnation: string): boolean {
    return this.records.some((r) => r.events.some((e) => e.type === 'acknowledged' && e.incarnation === incarnation));
  }

  /** Whether some leader recorded `incarnation` skipped (as a graceful withdraw). */
  skipped(incarnation: string): boolean {
    return this.records.some((r) => r.events.some((e) => e.type === 'skipped' && e.incarnation === incarnation));
  }

  /** Starts the next process of `name` (its last one must be gone) and waits until it is ready. */
  async launch(name: string): Promise<void> {
    const slot = this.slots.get(name)!;
    const { backend, timing, workDir } = this.options;
    const incarnation = ++slot.starts;
    const via = slot.proxy && { host: slot.proxy.host, port: slot.proxy.port };
    const spec: ChaosSpec = {
      name,
      incarnation,
      part: slot.part,
      registry: {
        type: backend.name,
        [backend.name]: backend.section(via, workDir),
        cluster: this.options.cluster,
        identity: name,
        election: timing.election,
        member: timing.member,
        requestTimeoutMs: timing.requestTimeoutMs,
      },
      election: 'chaos',
      role: 'worker',
      resourceUrl: this.options.resourceUrl,
      writeIntervalMs: 50,
      tickMs: 20,
      stallThresholdMs: 100,
    };
    const process = new CandidateProcess<ChaosCommand, ChaosEvent>(spec, join(workDir, `${name}-${incarnation}.log`), (p, e) => this.onEvent(p as ChaosProcess, e), { entry: chaosEntry(), specVariable: CHAOS_SPEC_VARIABLE });
    slot.current = process;
    this.records.push(process.record);
    await process.event('ready', READY_BOUND_MS);
  }

  /**
   * Asks the processes of `part` to close their registries and exit (a worker
   * withdraws its incarnation); reports any that does not. The workers go
   * first, while the leaders still fail over whatever was lost before.
   */
  async shutdown(part: ChaosSpec['part']): Promise<string[]> {
    const live = [...this.slots.values()].filter((s) => s.part === part && s.current.alive).map((s) => s.current);
    live.forEach((p) => p.resume());
    const inTime = await Promise.all(live.map((p) => p.shutdown(SHUTDOWN_BOUND_MS)));
    if (part === 'leader') await this.closeProxies();
    return live.flatMap((p, i) => (inTime[i] ? [] : [`${p.describe()} did not exit within ${SHUTDOWN_BOUND_MS} ms of shutdown`]));
  }

  /** SIGKILLs whatever still runs (after a failure). */
  async kill(): Promise<void> {
    await Promise.all([...this.slots.values()].filter((s) => s.current?.alive).map((s) => s.current.kill()));
    await this.closeProxies();
  }

  private async closeProxies(): Promise<void> {
    await Promise.all([...this.slots.values()].flatMap((s) => (s.proxy ? [s.proxy.close()] : [])));
  }

  private onEvent(process: ChaosProcess, event: ChaosEvent): void {
    if (event.type === 'elected') this.leader = { process, token: event.token };
    else if (event.type === 'lost' && this.leader?.process === process && this.leader.token === event.token) this.leader = undefined;
  }
}
