import { fileURLToPath } from 'node:url';
import { ChildHandle } from '@rollcall/child-harness';
import { CliError, ExitCode } from '../errors.js';
import type { NodeCommand, NodeMessage } from './node.js';

const BIN = fileURLToPath(new URL('../bin.js', import.meta.url));

/** One process of the demo cluster. */
export interface DemoNode {
  id: string;
  kind: 'master' | 'worker';
  /** Its process, on the child-process harness: its reports are NodeMessage events. */
  proc: ChildHandle<NodeCommand, NodeMessage>;
  pid: number;
  /** What the demo did to it, or how it ended. */
  state: 'starting' | 'running' | 'killed' | 'paused' | 'withdrawing' | 'withdrawn' | 'exited';
}

/** Ctrl-C (or SIGTERM) while the demo waits. */
export class Interrupted extends Error {}

/**
 * The demo's processes and its waits: nodes started as `rollcall demo-node`
 * children, the signals sent to them, waits for a condition (checked on every
 * change, bounded, cut short by Ctrl-C or a node that died on its own), and the
 * stop of every process at the end.
 */
export class DemoCluster {
  readonly nodes = new Map<string, DemoNode>();
  readonly abort = new AbortController();
  private readonly waiters = new Set<() => void>();
  private stopped: Promise<number[]> | undefined;

  constructor(
    private readonly configFile: string,
    /**
     * Pause a worker by having it stop itself between two of its turns: on the
     * embedded sqlite store, a process stopped inside a write transaction would
     * hold the file's write lock and stall every other process.
     */
    private readonly selfStop: boolean,
    /** Each node's reports. */
    private readonly onMessage: (node: DemoNode, message: NodeMessage) => void,
    /** A node exited; `unexpected` when the demo did not end it. */
    private readonly onExit: (node: DemoNode, unexpected: string | undefined) => void,
  ) {}

  get stopping(): boolean {
    return this.stopped !== undefined;
  }

  spawn(kind: 'master' | 'worker', id: string): DemoNode {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REGISTRY_')));
    const proc = new ChildHandle<NodeCommand, NodeMessage>({ entry: BIN, args: ['demo-node', '--kind', kind, '--id', id, '--config', this.configFile], env, stdout: 'ignore', stderr: 'pipe', label: id });
    const node: DemoNode = { id, kind, proc, pid: proc.pid ?? -1, state: 'starting' };
    this.nodes.set(id, node);
    proc.onEvent((m) => {
      if (m.type === 'ready' && node.state === 'starting') node.state = 'running';
      else if (m.type === 'withdrawn') node.state = 'withdrawn';
      this.onMessage(node, m);
      this.changed();
    });
    void proc.exited.then(({ code, signal }) => {
      const ended = ['killed', 'withdrawn', 'withdrawing'].includes(node.state) || this.stopping;
      const said = proc.stderr.trim().split('\n').pop();
      if (node.state === 'withdrawing') node.state = 'withdrawn';
      else if (!ended) node.state = 'exited';
      this.onExit(node, ended ? undefined : `${signal ?? `code ${code}`}${said ? `: ${said}` : ''}`);
      this.changed();
    });
    return node;
  }

  /** Sends `signal` to a node, noting what it does to it. */
  signal(node: DemoNode, signal: 'SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT'): void {
    node.state = signal === 'SIGKILL' ? 'killed' : signal === 'SIGTERM' ? 'withdrawing' : signal === 'SIGSTOP' ? 'paused' : 'running';
    if (signal === 'SIGSTOP' && this.selfStop) node.proc.tell({ op: 'pause' });
    else node.proc.signal(signal);
  }

  /** Something changed: the waits check their conditions again. */
  changed(): void {
    this.waiters.forEach((w) => w());
  }

  /** Resolves when `done()` holds, checked on every change; rejects after `timeoutMs` naming `what`, or at once when a node died on its own. */
  until<T>(what: string, timeoutMs: number, done: () => T | undefined): Promise<T> {
    if (this.abort.signal.aborted) return Promise.reject(new Interrupted());
    return new Promise<T>((resolve, reject) => {
      const finish = (fn: () => void) => {
        this.waiters.delete(check);
        clearTimeout(timer);
        this.abort.signal.removeEventListener('abort', onAbort);
        fn();
      };
      const check = () => {
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
  pause(ms: number): Promise<void> {
    if (this.abort.signal.aborted) return Promise.reject(new Interrupted());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (this.abort.signal.removeEventListener('abort', onAbort), resolve()), ms);
      const onAbort = () => (clearTimeout(timer), reject(new Interrupted()));
      this.abort.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Stops every process (a paused one is continued first; SIGTERM, then SIGKILL after 5 s). Returns the pids. Idempotent. */
  stop(): Promise<number[]> {
    this.stopped ??= (async () => {
      const nodes = [...this.nodes.values()];
      for (const n of nodes) n.proc.signal('SIGCONT');
      for (const n of nodes) n.proc.signal('SIGTERM');
      const bounded = (ms: number) => Promise.all(nodes.map((n) => n.proc.exitedWithin(ms)));
      await bounded(5000);
      for (const n of nodes) n.proc.signal('SIGKILL');
      await bounded(5000);
      return nodes.map((n) => n.pid).filter((pid) => pid > 0);
    })();
    return this.stopped;
  }
}
