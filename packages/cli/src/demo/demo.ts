import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ChildHandle } from '@rollcall/child-harness';
import { createRegistry, type LeaderInfo, type LeaderObserver, type Member, type Registry } from '@rollcall/core';
import { describeKeys, isGiven, resolveCliConfig, type CliConfig, type ConfigFlags } from '../config.js';
import { CliError, ExitCode, formatError, toCliError, usageError } from '../errors.js';
import { metricsPort, serveRegistryMetrics, type MetricsFlags } from '../metrics.js';
import { age, since, table } from '../output.js';
import type { NodeMessage } from './node.js';

export interface DemoFlags extends ConfigFlags, MetricsFlags {
  /** Election and member lease, milliseconds. */
  lease?: string;
}

interface Node {
  id: string;
  kind: 'master' | 'worker';
  /** Its process, on the child-process harness: its reports are NodeMessage events. */
  proc: ChildHandle<never, NodeMessage>;
  pid: number;
  /** What the demo did to it, or how it ended. */
  state: 'starting' | 'running' | 'killed' | 'withdrawing' | 'withdrawn' | 'exited';
}

const MASTERS = 3;
const WORKERS = 4;
const BIN = fileURLToPath(new URL('../bin.js', import.meta.url));

class Interrupted extends Error {}

/**
 * `rollcall demo`: 3 masters campaigning for `scheduler` and 4 workers with
 * heartbeat payloads, each its own process, on the embedded sqlite store (or
 * any backend). A view of the registry, as the library sees it, redraws in
 * place on a terminal and prints plain lines otherwise. It kills the leader
 * with SIGKILL and measures the failover, has one worker withdraw and another
 * crash, prints a summary, and stops every process it started — also on Ctrl-C.
 */
export async function demoCommand(flags: DemoFlags): Promise<number> {
  const leaseMs = flags.lease === undefined ? 3000 : Number(flags.lease);
  if (!Number.isInteger(leaseMs) || leaseMs < 1000 || leaseMs > 60_000) throw usageError(`--lease ${JSON.stringify(flags.lease)}: expected milliseconds, 1000 to 60000`);
  const port = metricsPort(flags);
  const timings = {
    'registry.cluster': `demo-${randomBytes(3).toString('hex')}`,
    'registry.election.leaseDurationMs': leaseMs,
    'registry.election.renewDeadlineMs': Math.round((leaseMs * 2) / 3),
    'registry.election.retryPeriodMs': Math.round(leaseMs / 6),
    'registry.member.heartbeatIntervalMs': Math.max(250, Math.round(leaseMs / 3)),
    'registry.member.leaseDurationMs': leaseMs,
  };
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-demo-'));
  let config: CliConfig;
  try {
    config = await resolveCliConfig(flags, process.env, { 'registry.type': 'sqlite', ...timings });
    if (config.resolved.type === 'sqlite' && !isGiven(config.sources.get('registry.sqlite.path')?.source)) {
      config = await resolveCliConfig(flags, process.env, { 'registry.type': 'sqlite', ...timings, 'registry.sqlite.path': join(dir, 'demo.db') });
    }
    if (config.resolved.type === 'memory') throw usageError('the memory store lives inside one process and the demo runs seven: use the default (sqlite) or a server backend with --type', 'rollcall demo --type etcd -o registry.etcd.endpoints=http://127.0.0.1:2379');
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return new Demo(config, dir, leaseMs, port).run();
}

/** The smallest terminal the view fits; below it (or on TERM=dumb) the demo prints plain lines. */
export const MIN_VIEW = { columns: 60, rows: 16 };

/** `line` cut to `width` columns, an ellipsis marking the cut. */
export function fitLine(line: string, width: number): string {
  return line.length > width ? `${line.slice(0, Math.max(0, width - 1))}…` : line;
}

/**
 * The view's lines for a screen of `rows`: at most `rows - 1` (the cursor
 * stays on the last row, so nothing scrolls), each at most `columns - 1`
 * wide. Blank lines go first, then the oldest events, never the table.
 */
export function fitFrame(parts: { top: string[]; table: string[]; events: string[] }, columns: number, rows: number): string[] {
  const budget = rows - 1;
  const width = columns - 1;
  const spacious = [...parts.top.slice(0, 2), '', ...parts.top.slice(2), '', ...parts.table, '', 'events:'];
  const compact = [...parts.top, ...parts.table, 'events:'];
  const base = spacious.length + 1 <= budget ? spacious : compact;
  const room = Math.max(0, budget - base.length);
  const events = room > 0 ? parts.events.slice(-room) : [];
  return [...base, ...events.map((e) => `  ${e}`)].slice(0, budget).map((l) => fitLine(l, width));
}

class Demo {
  private readonly tty = process.stdout.isTTY === true && process.env.TERM !== 'dumb';
  private readonly started = performance.now();
  private readonly nodes = new Map<string, Node>();
  private readonly members = new Map<string, Member>();
  private leader: LeaderInfo | undefined;
  private readonly events: string[] = [];
  private phase = 'starting the cluster';
  private readonly waiters = new Set<() => void>();
  private readonly abort = new AbortController();
  private view: Registry | undefined;
  private stopMetrics: (() => Promise<void>) | undefined;
  private observer: LeaderObserver | undefined;
  private renderTimer: NodeJS.Timeout | undefined;
  private lastFrameLines = 0;
  private cleaned: Promise<number[]> | undefined;
  private readonly summary: string[] = [];

  constructor(
    private readonly config: CliConfig,
    private readonly dir: string,
    private readonly leaseMs: number,
    /** `--metrics-port`: serve the view's metrics there while the demo runs. */
    private readonly metricsPort: number | undefined,
  ) {}

  /** `rollcall watch` on this demo's cluster and store: its type, cluster and every key given to the demo (secrets masked). */
  private attachCommand(): string {
    const r = this.config.resolved;
    const given = describeKeys(this.config).filter((k) => k.layer !== 'default' && k.key !== 'registry.type' && k.key !== 'registry.cluster');
    const path = r.type === 'sqlite' && !given.some((k) => k.key === 'registry.sqlite.path') ? [` -o sqlite.path=${String(r.options.path)}`] : [];
    return `rollcall watch -t ${r.type} -c ${r.cluster}${path.join('')}${given.map((k) => ` -o ${k.key.replace(/^registry\./, '')}=${k.value}`).join('')}`;
  }

  private where(): string {
    const r = this.config.resolved;
    return r.type === 'sqlite' ? `sqlite (${String(r.options.path)})` : r.type;
  }

  private elapsed(): string {
    return `${((performance.now() - this.started) / 1000).toFixed(1)}s`.padStart(6);
  }

  /** An event: a plain line without a terminal, the view's event list with one. */
  private log(line: string): void {
    // Once stopping, what the nodes do on their way out is not the story.
    if (this.cleaned) return;
    const stamped = `[${this.elapsed()}] ${line}`;
    this.events.push(stamped);
    if (this.events.length > 9) this.events.shift();
    if (this.fits()) this.render();
    else process.stdout.write(stamped + '\n');
  }

  private notify(): void {
    this.waiters.forEach((w) => w());
    if (this.tty) this.render();
  }

  /** Resolves when `done()` holds, checked on every change; rejects after `timeoutMs` naming `what`. */
  private until<T>(what: string, timeoutMs: number, done: () => T | undefined): Promise<T> {
    if (this.abort.signal.aborted) return Promise.reject(new Interrupted());
    return new Promise<T>((resolve, reject) => {
      const finish = (fn: () => void) => {
        this.waiters.delete(check);
        clearTimeout(timer);
        this.abort.signal.removeEventListener('abort', onAbort);
        fn();
      };
      const check = () => {
        // A node that died on its own (it could not connect, say) ends the demo at once.
        const dead = [...this.nodes.values()].find((n) => n.state === 'exited');
        if (dead) {
          const why = dead.proc.stderr.trim().split('\n').pop()?.replace(/^rollcall: error /, '');
          finish(() => reject(new CliError('DEMO_FAILED', `${dead.id} exited unexpectedly while waiting for ${what}${why ? `: ${why}` : ''}`, ExitCode.FAILURE, 'is the backend reachable? `rollcall doctor` with the same options checks it')));
          return;
        }
        const value = done();
        if (value !== undefined) finish(() => resolve(value));
      };
      const onAbort = () => finish(() => reject(new Interrupted()));
      const timer = setTimeout(() => {
        const failed = [...new Set([...this.nodes.values()].map((n) => n.proc.stderr.trim().split('\n').pop()).filter(Boolean))];
        finish(() => reject(new CliError('DEMO_FAILED', `${what} did not happen within ${timeoutMs / 1000} s${failed.length ? `; a node said: ${failed.join('; ')}` : ''}`, ExitCode.FAILURE, 'is the backend reachable? `rollcall doctor` with the same options checks it')));
      }, timeoutMs);
      this.abort.signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(check);
      check();
    });
  }

  /** A pause for the viewer, cut short by Ctrl-C. */
  private pause(ms: number): Promise<void> {
    if (this.abort.signal.aborted) return Promise.reject(new Interrupted());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (this.abort.signal.removeEventListener('abort', onAbort), resolve()), ms);
      const onAbort = () => (clearTimeout(timer), reject(new Interrupted()));
      this.abort.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async run(): Promise<number> {
    const onSignal = () => this.abort.abort();
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    let exit: number = ExitCode.OK;
    try {
      await this.scenario();
    } catch (err) {
      if (err instanceof Interrupted || this.abort.signal.aborted) exit = ExitCode.INTERRUPTED;
      else {
        const e = toCliError(err, 'demo');
        this.phase = 'failed';
        // On stderr below; the view shows it too, plain lines would print it twice.
        if (this.fits()) this.log(`failed: ${e.code}: ${e.message}`);
        process.stderr.write(formatError(e) + '\n');
        exit = e.exitCode;
      }
    }
    if (this.tty) this.finishView();
    const pids = await this.cleanup();
    const left = pids.filter(alive);
    if (exit === ExitCode.INTERRUPTED) process.stdout.write(`interrupted: stopped ${pids.length} processes (pids ${pids.join(', ')}); ${left.length ? `still running: ${left.join(', ')}` : 'none left'}\n`);
    else if (pids.length > 0) {
      for (const line of this.summary) process.stdout.write(line + '\n');
      process.stdout.write(`stopped ${pids.length} processes (pids ${pids.join(', ')}); ${left.length ? `still running: ${left.join(', ')}` : 'none left'}\n`);
    }
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    return left.length && exit === ExitCode.OK ? ExitCode.FAILURE : exit;
  }

  private async scenario(): Promise<void> {
    const r = this.config.resolved;
    const header = `rollcall demo: ${MASTERS} masters and ${WORKERS} workers on ${this.where()}, cluster ${r.cluster}; election lease ${this.leaseMs / 1000} s, member heartbeat ${r.member.heartbeatIntervalMs / 1000} s, member lease ${r.member.leaseDurationMs / 1000} s`;
    this.header = header;
    if (!this.fits()) process.stdout.write(header + '\n');
    // The one line that attaches a watch to this demo's cluster; on a terminal it stays above the view.
    process.stdout.write(`watch it from another terminal: ${this.attachCommand()}\n`);
    if (this.tty) {
      process.stdout.write('\x1b[?25l');
      this.renderTimer = setInterval(() => void this.refreshMembers().then(() => this.render()), 250);
    }

    const configFile = join(this.dir, 'config.json');
    writeFileSync(configFile, JSON.stringify(this.config.flat), { mode: 0o600 });
    this.view = await createRegistry({ ...this.config.flat, 'registry.identity': 'demo-view' } as never);
    if (this.metricsPort !== undefined) this.stopMetrics = await serveRegistryMetrics(this.view, this.metricsPort, { roles: ['master', 'worker'], elections: ['scheduler'] });
    for (const role of ['master', 'worker']) {
      this.view.watchMembers(role, (e) => {
        const key = `${e.member.role}/${e.member.id}`;
        if (e.type === 'removed') {
          this.members.delete(key);
          this.log(`${e.member.id} left (${e.reason === 'deleted' ? 'record deleted: withdrawn, or expired by a peer' : e.reason})`);
          this.removals.push({ id: e.member.id, reason: e.reason, at: performance.now() });
        } else {
          if (e.type === 'added') this.log(`${e.member.id} joined ${e.member.role === 'worker' ? statusOf(e.member) : ''}`.trimEnd());
          this.members.set(key, e.member);
        }
        this.notify();
      });
    }
    const observer = (this.observer = this.view.observe('scheduler'));
    this.leader = observer.leader;
    observer.on('changed', ({ leader, previous }) => {
      this.leader = leader;
      if (leader) this.log(`leader ${leader.identity}, fencing token ${leader.fencingToken}`);
      else this.log(`no leader (was ${previous?.identity ?? 'none'})`);
      this.leaderChanges.push({ leader, at: performance.now() });
      this.notify();
    });

    for (let i = 1; i <= MASTERS; i++) this.spawn('master', `master-${i}`, configFile);
    for (let i = 1; i <= WORKERS; i++) this.spawn('worker', `worker-${i}`, configFile);

    // 1. Everyone joins, one master leads.
    const first = await this.until('all 7 members joining with a leader elected', 60_000, () =>
      this.members.size === MASTERS + WORKERS && this.leader ? this.leader : undefined,
    );
    this.log(`all ${MASTERS + WORKERS} members present; ${first.identity} leads with fencing token ${first.fencingToken}`);
    this.phase = `steady: ${first.identity} leads, workers heartbeat`;
    this.notify();
    if (!this.fits()) await this.printMemberTable();
    await this.pause(2500);

    // 2. The leader dies without a word: SIGKILL.
    const victim = this.nodes.get(first.identity);
    if (!victim) throw new CliError('DEMO_FAILED', `the leader ${first.identity} is not one of the demo's processes`, ExitCode.FAILURE);
    const killedAt = performance.now();
    victim.state = 'killed';
    victim.proc.signal('SIGKILL');
    this.phase = `failover: ${victim.id} was killed (SIGKILL); the others wait out its ${this.leaseMs / 1000} s lease`;
    this.log(`SIGKILL leader ${victim.id} (pid ${victim.pid})`);
    const next = await this.until('a new leader after the SIGKILL', 30_000, () => (this.leader && this.leader.identity !== victim.id ? this.leader : undefined));
    const failoverMs = performance.now() - killedAt;
    this.log(`failover: ${next.identity} leads with fencing token ${next.fencingToken}, ${(failoverMs / 1000).toFixed(2)} s after the SIGKILL`);
    this.phase = `failed over to ${next.identity} in ${(failoverMs / 1000).toFixed(2)} s`;
    this.notify();
    await this.pause(1500);

    // 3. A worker leaves gracefully: SIGTERM, it withdraws its record.
    const leaving = this.nodes.get('worker-2')!;
    const termAt = performance.now();
    leaving.state = 'withdrawing';
    leaving.proc.signal('SIGTERM');
    this.phase = `${leaving.id} withdraws (SIGTERM)`;
    this.log(`SIGTERM ${leaving.id} (pid ${leaving.pid}): it withdraws`);
    await this.until(`${leaving.id} leaving`, 20_000, () => this.removals.find((x) => x.id === leaving.id && x.at >= termAt));
    const withdrawMs = performance.now() - termAt;

    // 4. Another crashes: SIGKILL; the others notice when its member lease runs out.
    const crashing = this.nodes.get('worker-3')!;
    const crashAt = performance.now();
    crashing.state = 'killed';
    crashing.proc.signal('SIGKILL');
    this.phase = `${crashing.id} crashed (SIGKILL); waiting out its ${r.member.leaseDurationMs / 1000} s member lease`;
    this.log(`SIGKILL ${crashing.id} (pid ${crashing.pid}): a crash`);
    const crashGone = await this.until(`${crashing.id} expiring`, 30_000, () => this.removals.find((x) => x.id === crashing.id && x.at >= crashAt));
    const crashMs = crashGone.at - crashAt;
    // The killed leader's own member record expires the same way.
    await this.until(`${victim.id}'s member record expiring`, 30_000, () => (this.members.has(`master/${victim.id}`) ? undefined : true));
    this.phase = 'done';
    this.notify();
    await this.pause(this.tty ? 1500 : 0);
    if (!this.fits()) await this.printMemberTable();

    const lastLeader = this.leader ?? next;
    this.summary.push(
      'summary:',
      `  backend            ${this.where()}, cluster ${r.cluster}`,
      `  processes          ${MASTERS} masters, ${WORKERS} workers (${this.nodes.size} started)`,
      `  leader             ${first.identity} (fencing token ${first.fencingToken}) -> ${lastLeader.identity} (fencing token ${lastLeader.fencingToken})`,
      `  failover           ${(failoverMs / 1000).toFixed(2)} s from the SIGKILL of ${victim.id} to ${next.identity} leading (election lease ${this.leaseMs / 1000} s)`,
      `  graceful withdraw  ${leaving.id} gone ${(withdrawMs / 1000).toFixed(2)} s after SIGTERM (its record deleted)`,
      `  crash              ${crashing.id} gone ${(crashMs / 1000).toFixed(2)} s after SIGKILL (member lease ${r.member.leaseDurationMs / 1000} s ran out)`,
      `  members now        ${[...this.members.values()].map((m) => m.id).sort().join(', ')}`,
    );
  }

  private header = '';
  private readonly removals: { id: string; reason: string; at: number }[] = [];
  private readonly leaderChanges: { leader: LeaderInfo | undefined; at: number }[] = [];

  private spawn(kind: 'master' | 'worker', id: string, configFile: string): void {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REGISTRY_')));
    const proc = new ChildHandle<never, NodeMessage>({ entry: BIN, args: ['demo-node', '--kind', kind, '--id', id, '--config', configFile], env, stdout: 'ignore', stderr: 'pipe', label: id });
    const node: Node = { id, kind, proc, pid: proc.pid ?? -1, state: 'starting' };
    this.nodes.set(id, node);
    proc.onEvent((m) => {
      if (m.type === 'ready') node.state = 'running';
      else if (m.type === 'elected') this.log(`${m.id}: elected, fencing token ${m.fencingToken}`);
      else if (m.type === 'lost') this.log(`${m.id}: lost leadership (${m.reason})`);
      else if (m.type === 'withdrawn') node.state = 'withdrawn';
      else if (m.type === 'failed') this.log(`${m.id}: ${m.message}`);
      this.notify();
    });
    void proc.exited.then(({ code, signal }) => {
      const said = proc.stderr.trim();
      if (node.state !== 'killed' && node.state !== 'withdrawn' && node.state !== 'withdrawing' && !this.cleaned) this.log(`${id} exited unexpectedly (${signal ?? `code ${code}`})${said ? `: ${said.split('\n').pop()}` : ''}`);
      if (node.state === 'withdrawing') node.state = 'withdrawn';
      else if (node.state !== 'killed' && node.state !== 'withdrawn') node.state = 'exited';
      this.notify();
    });
    this.log(`started ${id} pid ${node.pid}`);
  }

  /**
   * Takes each present member from the view's current list: a heartbeat that keeps the
   * payload is no member event, so the member from the last event carries the time of the
   * last payload change, not of the last renewal. Events alone decide who is present.
   */
  private async refreshMembers(): Promise<void> {
    const view = this.view;
    if (!view || this.cleaned) return;
    const current = await Promise.all(['master', 'worker'].map((role) => view.members(role))).catch(() => []);
    for (const m of current.flat()) {
      const key = `${m.role}/${m.id}`;
      if (this.members.has(key)) this.members.set(key, m);
    }
  }

  private async printMemberTable(): Promise<void> {
    await this.refreshMembers();
    process.stdout.write(this.memberTable() + '\n');
  }

  private memberTable(): string {
    const rows = [...this.nodes.values()].map((n) => {
      const m = this.members.get(`${n.kind}/${n.id}`);
      const p = (m?.payload ?? {}) as Record<string, unknown>;
      const lead = this.leader?.identity === n.id ? ` (leader, token ${this.leader.fencingToken})` : '';
      const status = m ? `${String(p.status ?? '-')}${lead}` : n.state === 'killed' ? 'killed' : n.state === 'withdrawn' || n.state === 'withdrawing' ? 'withdrawn' : n.state === 'starting' ? 'starting' : 'gone';
      const fmt = (v: unknown) => (typeof v === 'number' ? v.toFixed(2) : '-');
      return [n.kind, n.id, n.pid, status, fmt(p.cpu), fmt(p.memory), fmt(p.load), m ? age(since(m.renewTime)) : '-'];
    });
    return table(['role', 'id', 'pid', 'status', 'cpu', 'memory', 'load', 'heartbeat'], rows);
  }

  /** Whether the view redraws in place now: a terminal (not TERM=dumb) at least MIN_VIEW large, read at every redraw so resizes are followed. */
  private fits(): boolean {
    return this.tty && (process.stdout.columns ?? 0) >= MIN_VIEW.columns && (process.stdout.rows ?? 0) >= MIN_VIEW.rows;
  }

  private render(): void {
    if (!this.tty || this.cleaned) return;
    if (!this.fits()) {
      // Too small now: the next frame starts afresh below the plain lines printed meanwhile.
      this.lastFrameLines = 0;
      return;
    }
    // The observer's leader is current; the one from the last 'changed' event has that term's first renewal.
    const current = this.observer?.leader ?? this.leader;
    const leader = current ? `leader: ${current.identity}   fencing token ${current.fencingToken}   renewed ${age(since(current.renewTime))} ago` : 'leader: (none)';
    const frame = fitFrame({ top: [this.header, `phase: ${this.phase}   ${this.elapsed().trim()}`, leader], table: this.memberTable().split('\n'), events: this.events }, process.stdout.columns, process.stdout.rows);
    const up = this.lastFrameLines > 0 ? `\x1b[${this.lastFrameLines}F` : '';
    process.stdout.write(`${up}\x1b[J${frame.join('\n')}\n`);
    this.lastFrameLines = frame.length;
  }

  private finishView(): void {
    if (!this.tty) return;
    clearInterval(this.renderTimer);
    this.renderTimer = undefined;
    this.render();
    process.stdout.write('\x1b[?25h');
    this.lastFrameLines = 0;
  }

  /** Stops every process the demo started (SIGTERM, then SIGKILL after 5 s), closes the view, removes the temp dir. Returns the pids. */
  private cleanup(): Promise<number[]> {
    this.cleaned ??= (async () => {
      clearInterval(this.renderTimer);
      const nodes = [...this.nodes.values()];
      for (const n of nodes) n.proc.signal('SIGTERM');
      const bounded = (ms: number) => Promise.all(nodes.map((n) => n.proc.exitedWithin(ms)));
      await bounded(5000);
      for (const n of nodes) n.proc.signal('SIGKILL');
      await bounded(5000);
      await this.stopMetrics?.();
      await Promise.race([this.view?.close().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
      rmSync(this.dir, { recursive: true, force: true });
      return nodes.map((n) => n.pid).filter((pid) => pid > 0);
    })();
    return this.cleaned;
  }
}

function statusOf(m: Member): string {
  const p = (m.payload ?? {}) as Record<string, unknown>;
  return `${String(p.status ?? '')} cpu ${String(p.cpu ?? '-')} memory ${String(p.memory ?? '-')} load ${String(p.load ?? '-')}`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
