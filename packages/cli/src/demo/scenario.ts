import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRegistry } from '@rollcall/core';
import type { CliConfig } from '../config.js';
import { CliError, ExitCode, formatError, toCliError } from '../errors.js';
import { serveRegistryMetrics } from '../metrics.js';
import { age, since } from '../output.js';
import { DemoCluster, Interrupted, type DemoNode } from './cluster.js';
import { FailoverLedger } from './failovers.js';
import { fitFrame, hintLines, memberTable, summaryLines, type MemberRow } from './frame.js';
import type { NodeMessage } from './node.js';
import { DemoScreen } from './screen.js';
import { summaryRows, type Measured } from './summary.js';
import { ClusterView } from './view.js';

export const MASTERS = 3;
export const WORKERS = 4;
/** Items per worker at the start: t1…t12. */
const ITEMS = 3;

/** Where the demo runs and what it leaves for `rollcall watch`. */
export interface DemoSetup {
  config: CliConfig;
  /** Its temp dir: the nodes' configuration, removed at the end. */
  dir: string;
  /** `sqlite (<path>)` or the backend type. */
  where: string;
  leaseMs: number;
  /** The `watch` command that attaches to this cluster (its configuration file outlives the demo). */
  watch: string;
  /** `--metrics-port`: serve the view's metrics there while the demo runs. */
  metricsPort: number | undefined;
}

/**
 * `rollcall demo`'s story over its parts: the processes ({@link DemoCluster}),
 * the registry view ({@link ClusterView}), the task table and failovers
 * ({@link FailoverLedger}) and the screen ({@link DemoScreen}). It kills the
 * leader, has a worker withdraw, one crash and one pause past its lease, and
 * measures each; a summary says what was measured.
 */
export class DemoScenario {
  private readonly screen = new DemoScreen();
  private readonly started = performance.now();
  private readonly cluster: DemoCluster;
  private readonly ledger: FailoverLedger;
  private view: ClusterView | undefined;
  private readonly events: string[] = [];
  private phase = 'starting the cluster';
  private header: string;
  private renderTimer: NodeJS.Timeout | undefined;
  private stopMetrics: (() => Promise<void>) | undefined;
  private rows: [string, string][] = [];

  constructor(private readonly setup: DemoSetup) {
    const r = setup.config.resolved;
    this.header = `rollcall demo: ${MASTERS} masters, ${WORKERS} workers on ${setup.where}, cluster ${r.cluster}; election lease ${setup.leaseMs / 1000} s, heartbeat ${r.member.heartbeatIntervalMs / 1000} s, member lease ${r.member.leaseDurationMs / 1000} s`;
    this.cluster = new DemoCluster(
      join(setup.dir, 'config.json'),
      setup.config.resolved.type === 'sqlite',
      (_node, m) => this.onMessage(m),
      (node, unexpected) => unexpected !== undefined && this.log(`${node.id} exited unexpectedly (${unexpected})`),
    );
    this.ledger = new FailoverLedger(this.cluster.nodes, (line) => this.log(line));
  }

  async run(): Promise<number> {
    const onSignal = () => this.cluster.abort.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    let exit: number = ExitCode.OK;
    try {
      await this.story();
    } catch (err) {
      if (err instanceof Interrupted || this.cluster.abort.signal.aborted) exit = ExitCode.INTERRUPTED;
      else {
        const e = toCliError(err, 'demo');
        this.phase = 'failed';
        // On stderr below; the view shows it too, plain lines would print it twice.
        if (this.screen.fits()) this.log(`failed: ${e.code}: ${e.message}`);
        process.stderr.write(formatError(e) + '\n');
        exit = e.exitCode;
      }
    }
    clearInterval(this.renderTimer);
    this.screen.leave();
    const pids = await this.cluster.stop();
    await this.stopMetrics?.();
    this.view?.close();
    await Promise.race([this.view?.registry.close().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
    const left = pids.filter(alive);
    const stopped = `stopped ${pids.length} processes (pids ${pids.join(', ')}); ${left.length ? `still running: ${left.join(', ')}` : 'none left'}`;
    if (exit === ExitCode.INTERRUPTED) process.stdout.write(`interrupted: ${stopped}\n`);
    else if (pids.length > 0) {
      const width = this.screen.tty ? this.screen.columns - 1 : Infinity;
      for (const line of summaryLines(this.rows, width > 0 ? width : Infinity)) process.stdout.write(line + '\n');
      process.stdout.write(`${stopped}\n`);
    }
    if (pids.length > 0) process.stdout.write(`watch it (its store and cluster stay until you delete them):\n${this.setup.watch}\n`);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    return left.length && exit === ExitCode.OK ? ExitCode.FAILURE : exit;
  }

  private async story(): Promise<void> {
    const { config, leaseMs } = this.setup;
    const r = config.resolved;
    if (!this.screen.fits()) {
      this.screen.line(this.header);
      this.screen.line(`watch it: ${this.setup.watch}`);
    }
    if (this.screen.tty) this.renderTimer = setInterval(() => void this.view?.refresh().then(() => this.render()), 250);
    writeFileSync(join(this.setup.dir, 'config.json'), JSON.stringify(config.flat), { mode: 0o600 });
    const registry = await createRegistry({ ...config.flat, 'registry.identity': 'demo-view' } as never);
    const view = (this.view = new ClusterView(registry, (line) => this.log(line), () => this.changed()));
    if (this.setup.metricsPort !== undefined) this.stopMetrics = await serveRegistryMetrics(registry, this.setup.metricsPort, { roles: ['master', 'worker'], elections: ['scheduler'] });
    view.start();
    for (let i = 1; i <= MASTERS; i++) this.spawn('master', `master-${i}`);
    for (let i = 1; i <= WORKERS; i++) this.spawn('worker', `worker-${i}`);
    const { cluster, ledger } = this;

    // 1. Everyone joins, one master leads; the task table gives each worker its items.
    const first = await cluster.until(`all ${MASTERS + WORKERS} members joining with a leader elected`, 60_000, () => (view.members.size === MASTERS + WORKERS && view.leader && ledger.incarnations.size === WORKERS ? view.leader : undefined));
    for (let w = 1; w <= WORKERS; w++) ledger.assign(`worker-${w}`, Array.from({ length: ITEMS }, (_, i) => `t${(w - 1) * ITEMS + i + 1}`));
    await cluster.until('every worker heartbeating its items', 20_000, () => ([...view.members.values()].filter((m) => m.role === 'worker' && ((m.payload as { items?: unknown[] })?.items?.length ?? 0) === ITEMS).length === WORKERS ? true : undefined));
    this.log(`all ${MASTERS + WORKERS} members present; ${first.identity} leads with fencing token ${first.fencingToken}; ${ITEMS * WORKERS} items on ${WORKERS} workers`);
    this.setPhase(`steady: ${first.identity} leads, workers run their items`);
    if (!this.screen.fits()) await this.printTable();
    await cluster.pause(2500);

    // 2. The leader dies without a word: SIGKILL.
    const victim = this.node(first.identity);
    const killedAt = performance.now();
    this.signal(victim, 'SIGKILL', `SIGKILL leader ${victim.id} (pid ${victim.pid})`, `failover: ${victim.id} was killed (SIGKILL); the others wait out its ${leaseMs / 1000} s lease`);
    const next = await cluster.until('a new leader after the SIGKILL', 30_000, () => (view.leader && view.leader.identity !== victim.id ? view.leader : undefined));
    const failoverMs = performance.now() - killedAt;
    this.log(`failover: ${next.identity} leads with fencing token ${next.fencingToken}, ${(failoverMs / 1000).toFixed(2)} s after the SIGKILL`);
    this.setPhase(`${next.identity} leads since ${(failoverMs / 1000).toFixed(2)} s after the SIGKILL`);
    await cluster.pause(1500);

    // 3. A worker leaves gracefully (SIGTERM: it deletes its record); 4. one crashes (SIGKILL); 5. one is paused past its lease (SIGSTOP).
    const withdraw = await this.failWorker('worker-2', 'SIGTERM', 'it withdraws', 'withdraws (SIGTERM); its items are failed over');
    const crash = await this.failWorker('worker-3', 'SIGKILL', 'a crash', `crashed (SIGKILL); its peers wait out its ${r.member.leaseDurationMs / 1000} s member lease`);
    // On sqlite the worker stops itself (SIGSTOP) between two of its turns: see DemoCluster.
    const pause = await this.failWorker('worker-4', 'SIGSTOP', r.type === 'sqlite' ? 'a pause (it stops itself between two writes, holding no lock on the sqlite file)' : 'a pause', `paused (SIGSTOP) past its ${r.member.leaseDurationMs / 1000} s member lease`);
    const paused = this.node('worker-4');
    await this.cluster.pause(1000); // failed over while it sleeps
    const contAt = performance.now();
    this.signal(paused, 'SIGCONT', `SIGCONT ${paused.id}: it resumes, ${((contAt - pause.signalledAt) / 1000).toFixed(1)} s later`, `${paused.id} resumed (SIGCONT)`);
    const stop = await cluster.until(`${paused.id} stopping its items`, 20_000, () => ledger.stopped.find((s) => s.incarnation === pause.incarnation));
    await cluster.until(`${paused.id} announced again`, 20_000, () => (ledger.incarnations.get(paused.id) !== pause.incarnation && view.member('worker', paused.id) ? true : undefined));
    // The killed leader's own member record expires the same way.
    await cluster.until(`${victim.id}'s member record expiring`, 30_000, () => (view.member('master', victim.id) ? undefined : true));
    this.setPhase('done');
    await cluster.pause(this.screen.tty ? 1500 : 0);
    if (!this.screen.fits()) await this.printTable();

    const last = view.current ?? next;
    const measured: Measured = { where: this.setup.where, cluster: r.cluster, started: this.cluster.nodes.size, first, last, victim: victim.id, next: next.identity, failoverMs, leaseMs, memberLeaseMs: r.member.leaseDurationMs, heartbeatMs: r.member.heartbeatIntervalMs, withdraw, crash, pause: { ...pause, resumedAfterMs: contAt - pause.signalledAt, stopped: stop }, table: ledger.table, members: [...view.members.values()].map((m) => m.id).sort() };
    this.rows = summaryRows(measured);
  }

  /** Sends `signal` to a worker and waits for its removal and its failover's acknowledgement; what was measured. */
  private async failWorker(id: string, signal: 'SIGTERM' | 'SIGKILL' | 'SIGSTOP', what: string, phase: string) {
    const node = this.node(id);
    const incarnation = this.ledger.incarnations.get(id);
    const signalledAt = performance.now();
    this.signal(node, signal, `${signal} ${id} (pid ${node.pid}): ${what}`, `${id} ${phase}`);
    const removed = await this.cluster.until(`${id} leaving`, 30_000, () => this.view!.removedSince(id, signalledAt));
    const failover = await this.cluster.until(`${id}'s failover`, 30_000, () => this.ledger.acked(incarnation));
    // A master fails over the items a dead worker's last heartbeat listed: wait until each live worker heartbeats the items
    // the task table now gives it, so the next worker to die has announced what it holds.
    await this.cluster.until('the moved items heartbeated by their new workers', 30_000, () => (this.itemsHeartbeated() ? true : undefined));
    return { id, incarnation: incarnation ?? '', signalledAt, removedMs: removed.at - signalledAt, reason: removed.reason, failover, ackedMs: (failover.ackedAt ?? performance.now()) - signalledAt };
  }

  /** Whether every live worker's last heartbeat payload lists each item the task table gives its incarnation. */
  private itemsHeartbeated(): boolean {
    for (const [id, incarnation] of this.ledger.incarnations) {
      const member = this.view!.member('worker', id);
      if (!member || member.incarnation !== incarnation) continue;
      const listed = new Set((member.payload as { items?: unknown[] } | undefined)?.items?.map(String) ?? []);
      if (this.ledger.table.ownedBy(incarnation).some((item) => !listed.has(item))) return false;
    }
    return true;
  }

  private spawn(kind: 'master' | 'worker', id: string): void {
    const node = this.cluster.spawn(kind, id);
    this.log(`started ${id} pid ${node.pid}`);
  }

  private signal(node: DemoNode, signal: 'SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT', line: string, phase: string): void {
    this.cluster.signal(node, signal);
    this.log(line);
    this.setPhase(phase);
  }

  private node(id: string): DemoNode {
    const node = this.cluster.nodes.get(id);
    if (!node) throw new CliError('DEMO_FAILED', `${id} is not one of the demo's processes`, ExitCode.FAILURE);
    return node;
  }

  private onMessage(m: NodeMessage): void {
    if (m.type === 'elected') this.log(`${m.id}: elected, fencing token ${m.fencingToken}`);
    else if (m.type === 'lost') this.log(`${m.id}: lost leadership (${m.reason})`);
    else if (m.type === 'failed') this.log(`${m.id}: ${m.message}`);
    else this.ledger.apply(m);
    this.render();
  }

  private elapsed(): string {
    return `${((performance.now() - this.started) / 1000).toFixed(1)}s`.padStart(6);
  }

  /** An event: a plain line without a view, the view's event list with one. */
  private log(line: string): void {
    // Once stopping, what the nodes do on their way out is not the story.
    if (this.cluster.stopping) return;
    const stamped = `[${this.elapsed()}] ${line}`;
    this.events.push(stamped);
    if (this.events.length > 20) this.events.shift();
    if (!this.screen.fits()) this.screen.line(stamped);
    else this.render();
  }

  private setPhase(phase: string): void {
    this.phase = phase;
    this.changed();
  }

  private changed(): void {
    this.cluster.changed();
    this.render();
  }

  private tableRows(): MemberRow[] {
    const leader = this.view?.current;
    return [...this.cluster.nodes.values()].map((n) => {
      const m = this.view?.member(n.kind, n.id);
      const p = (m?.payload ?? {}) as Record<string, unknown>;
      const fmt = (v: unknown) => (typeof v === 'number' ? v.toFixed(2) : '-');
      const role = n.kind === 'master' ? (leader?.identity === n.id ? `leader t${leader.fencingToken}` : 'follower') : String(p.status ?? '-');
      const status = n.state === 'paused' ? 'paused' : m ? role : n.state === 'killed' ? 'killed' : n.state === 'withdrawn' || n.state === 'withdrawing' ? 'withdrawn' : n.state === 'starting' || n.state === 'running' ? 'starting' : 'gone';
      const incarnation = this.ledger.incarnations.get(n.id);
      return { id: n.id, pid: n.pid, status, cpu: fmt(p.cpu), memory: fmt(p.memory), load: fmt(p.load), beat: m ? age(since(m.renewTime)) : '-', items: n.kind === 'worker' && incarnation ? this.ledger.table.ownedBy(incarnation) : [] };
    });
  }

  private async printTable(): Promise<void> {
    await this.view?.refresh();
    this.screen.line(memberTable(this.tableRows()).join('\n'));
  }

  private render(): void {
    if (!this.screen.tty || this.cluster.stopping || !this.screen.fits()) return;
    const current = this.view?.current;
    const leader = current ? `leader: ${current.identity}   fencing token ${current.fencingToken}   renewed ${age(since(current.renewTime))} ago` : 'leader: (none)';
    const { columns, rows } = this.screen;
    const frame = fitFrame({ top: [this.header, `phase: ${this.phase}   ${this.elapsed().trim()}`, leader], hint: hintLines(this.setup.watch, columns - 1), table: memberTable(this.tableRows(), columns), events: this.events }, columns, rows);
    this.screen.draw(frame);
  }
}

/** Whether a process of this pid is still running. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
