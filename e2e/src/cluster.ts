import { join } from 'node:path';
import type { LeaseTiming, MemberTiming, RegistryConfigInput } from '@rollcall/core';
import { TcpProxy } from '@rollcall/tools/testenv';
import type { Address, BackendName, SoakBackend } from './backends.js';
import type { CandidateHandle, CandidateRunner, IncarnationRecord } from './candidate-handle.js';
import { PROCESS_RUNNER } from './candidate-process.js';
import type { CandidateEvent, CandidateSpec } from './protocol.js';

/** The timings every candidate's registry runs with. */
export interface SoakTiming {
  election: LeaseTiming;
  lock: LeaseTiming;
  /** `renewDeadlineMs` unset is core's default, ¾ of the lease. */
  member: Omit<MemberTiming, 'renewDeadlineMs'> & { renewDeadlineMs?: number };
  /** Bound on each backend call, milliseconds. */
  requestTimeoutMs: number;
}

export interface ClusterOptions {
  backend: SoakBackend;
  /** Candidate processes. */
  size: number;
  /** The registry cluster the candidates share, fresh per run. */
  cluster: string;
  /** Where candidate logs, kubeconfigs and the sqlite file go. */
  workDir: string;
  resourceUrl: string;
  timing: SoakTiming;
  /**
   * Where each incarnation's registry points, for runs over more than one
   * backend (a rolling restart through registry.type=migrate): the backends
   * whose servers each candidate reaches through proxies of its own, and the
   * registry configuration of an incarnation, given the addresses of its
   * proxies (without the core keys, which the cluster sets). Default: `backend`
   * alone, through one proxy.
   */
  placement?: Placement;
  /** More member ids each candidate announces (see CandidateSpec.extraMembers). Default none. */
  extraMembers?: (name: string) => string[];
  /** Where the candidates run. Default: child processes of this one. */
  runner?: CandidateRunner;
  /** Each candidate serves the readiness probe on this port (see CandidateSpec.probePort). Default none. */
  probePort?: number;
}

export interface Placement {
  backends: readonly SoakBackend[];
  /** (A `member` section here adds to the timing's: `liveness`.) */
  registry(name: string, incarnation: number, vias: ReadonlyMap<BackendName, Address | undefined>): Pick<RegistryConfigInput, 'type'> & Record<string, unknown>;
}

/** The soak's own placement: every candidate on the one backend. */
function singleBackend(backend: SoakBackend, workDir: string): Placement {
  return { backends: [backend], registry: (_name, _incarnation, vias) => ({ type: backend.name, [backend.name]: backend.section(vias.get(backend.name), workDir) }) };
}

/** Bound on a candidate opening its registry and announcing itself, milliseconds (a server may be restarting). */
const READY_BOUND_MS = 90_000;
/** Bound on a candidate answering a command, milliseconds. */
const ANSWER_BOUND_MS = 15_000;
/** Between two looks at the member views while waiting for them to agree, milliseconds. */
const CONVERGE_POLL_MS = 250;

interface Slot {
  name: string;
  vias: Map<BackendName, Address | undefined>;
  proxies: Map<BackendName, TcpProxy>;
  current: CandidateHandle;
  incarnations: number;
}

/**
 * The soak's candidates: one slot per name, each a process that is restarted
 * under the same name after a SIGKILL, behind a TCP proxy of its own. Tracks the
 * leader from the events as they arrive, to aim faults and wait for terms.
 */
export class SoakCluster {
  /** Every process ever started, in start order. */
  readonly records: IncarnationRecord[] = [];
  /** Election terms begun so far. */
  terms = 0;
  /** The election's leader by the events seen so far. */
  leader: { name: string; token: number; process: CandidateHandle } | undefined;
  private readonly slots = new Map<string, Slot>();
  private readonly waiters = new Set<() => void>();
  private checkpoints = 0;
  private readonly placement: Placement;

  private constructor(private readonly options: ClusterOptions) {
    this.placement = options.placement ?? singleBackend(options.backend, options.workDir);
  }

  static async start(options: ClusterOptions): Promise<SoakCluster> {
    const cluster = new SoakCluster(options);
    for (let i = 1; i <= options.size; i++) {
      const name = `c${i}`;
      const slot: Slot = { name, vias: new Map(), proxies: new Map(), current: undefined!, incarnations: 0 };
      // Each candidate reaches each server through a proxy of its own, so one can be cut off alone.
      for (const backend of cluster.placement.backends) {
        const server = backend.server();
        const proxy = server && (await TcpProxy.start(server));
        if (proxy) slot.proxies.set(backend.name, proxy);
        slot.vias.set(backend.name, proxy ? { host: proxy.host, port: proxy.port } : undefined);
      }
      cluster.slots.set(name, slot);
    }
    try {
      await Promise.all([...cluster.slots.keys()].map((name) => cluster.launch(name)));
    } catch (err) {
      // One that never got ready ends the run: the others must not outlive it.
      await cluster.kill();
      throw err;
    }
    return cluster;
  }

  get names(): string[] {
    return [...this.slots.keys()];
  }

  /** The running processes. */
  live(): CandidateHandle[] {
    return [...this.slots.values()].map((s) => s.current).filter((p) => p.alive);
  }

  /** A running, unpaused candidate other than `except`, at random. */
  randomCandidate(except?: CandidateHandle): CandidateHandle | undefined {
    const choices = this.live().filter((p) => p !== except && !p.stopped);
    return choices[Math.floor(Math.random() * choices.length)];
  }

  /** The proxy between candidate `name` and `backend`'s server (the soak's one backend by default). */
  proxyOf(name: string, backend: BackendName = this.placement.backends[0]!.name): TcpProxy {
    const proxy = this.slots.get(name)!.proxies.get(backend);
    if (!proxy) throw new Error(`candidate ${name} has no proxy to ${backend} to cut`);
    return proxy;
  }

  /** The running incarnation of `name`. */
  current(name: string): CandidateHandle {
    return this.slots.get(name)!.current;
  }

  /** Starts the next incarnation of `name` (its last one must be gone) and waits until it has announced itself. */
  async restart(name: string): Promise<void> {
    await this.launch(name);
  }

  /** Resolves once some running, unpaused candidate leads; rejects after `timeoutMs`. */
  waitForLeader(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const leader = this.leader;
        if (!leader || !leader.process.alive || leader.process.stopped) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`no leader within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** Asks every running, unpaused candidate for its member view (the verdict compares it with its events). */
  checkpoint(): number {
    const checkpoint = ++this.checkpoints;
    for (const p of this.live()) if (!p.stopped) p.send({ op: 'checkpoint', checkpoint });
    return checkpoint;
  }

  /**
   * The end of the run: updates stop, then every candidate's member view must
   * come to hold exactly every candidate with its last payload within
   * `timeoutMs`. Returns what still differed if it did not (a lost event).
   */
  async converge(timeoutMs: number): Promise<string[]> {
    const live = this.live();
    live.forEach((p) => p.send({ op: 'quiesce' }));
    const expected = new Map<string, string>();
    for (const p of live) expected.set(p.name, JSON.stringify((await p.event('quiesced', ANSWER_BOUND_MS)).payload));
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const checkpoint = this.checkpoint();
      const views = await Promise.all(live.map(async (p) => ({ p, view: await p.event('members', ANSWER_BOUND_MS, (e) => e.checkpoint === checkpoint) })));
      const differing = views.flatMap(({ p, view }) => {
        const seen = new Map(view.members.map((m) => [m.id, JSON.stringify(m.payload)]));
        const wrong = [...new Set([...expected.keys(), ...seen.keys()])].filter((id) => expected.get(id) !== seen.get(id));
        return wrong.length === 0 ? [] : [`${p.describe()} sees ${wrong.map((id) => `${id}=${seen.get(id) ?? 'absent'}`).join(', ')}; expected ${wrong.map((id) => `${id}=${expected.get(id) ?? 'absent'}`).join(', ')}`];
      });
      if (differing.length === 0) return [];
      if (performance.now() > deadline) return differing.map((d) => `lost member event: ${timeoutMs} ms after the last update, ${d}`);
      await new Promise((resolve) => setTimeout(resolve, CONVERGE_POLL_MS));
    }
  }

  /** Asks every candidate to close its registry and exit; one that does not within the bound is killed and reported. */
  async shutdown(): Promise<string[]> {
    for (const p of this.live()) p.resume();
    const results = await Promise.all(this.live().map(async (p) => ((await p.shutdown(ANSWER_BOUND_MS)) ? [] : [`${p.describe()} did not exit within ${ANSWER_BOUND_MS} ms of shutdown`])));
    await this.closeProxies();
    return results.flat();
  }

  /** SIGKILLs whatever still runs (after a failure). */
  async kill(): Promise<void> {
    await Promise.all(this.live().map((p) => p.kill()));
    await this.closeProxies();
  }

  private async closeProxies(): Promise<void> {
    await Promise.all([...this.slots.values()].flatMap((s) => [...s.proxies.values()].map((p) => p.close())));
  }

  private async launch(name: string): Promise<void> {
    const slot = this.slots.get(name)!;
    const { timing, workDir } = this.options;
    const incarnation = ++slot.incarnations;
    const placed = this.placement.registry(name, incarnation, slot.vias);
    const spec: CandidateSpec = {
      name,
      incarnation,
      registry: {
        ...placed,
        cluster: this.options.cluster,
        identity: name,
        election: timing.election,
        lock: timing.lock,
        member: { ...timing.member, ...(placed.member as object | undefined) },
        requestTimeoutMs: timing.requestTimeoutMs,
      },
      election: 'soak',
      lock: 'soak',
      role: 'candidate',
      resourceUrl: this.options.resourceUrl,
      writeIntervalMs: 50,
      tickMs: 20,
      stallThresholdMs: 100,
      updateIntervalMs: 1000,
      lockHoldMs: [100, 600],
      extraMembers: this.options.extraMembers?.(name),
      probePort: this.options.probePort,
    };
    const candidate = await (this.options.runner ?? PROCESS_RUNNER).start(spec, join(workDir, `${name}-${incarnation}.log`), (p, e) => this.onEvent(p, e));
    slot.current = candidate;
    this.records.push(candidate.record);
    await candidate.event('ready', READY_BOUND_MS);
  }

  private onEvent(candidate: CandidateHandle, event: CandidateEvent): void {
    if (event.type === 'elected') {
      this.terms++;
      this.leader = { name: candidate.name, token: event.token, process: candidate };
    } else if (event.type === 'lost' && this.leader?.process === candidate && this.leader.token === event.token) {
      this.leader = undefined;
    }
    this.waiters.forEach((wake) => wake());
  }
}
