import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { StopWaiting, waitFor } from '@rollcall/conformance';
import type { Task, TaskStatus } from '../src/index.js';

/** Which runner of the pair: the one elected first, and the other; a replacement keeps the role's name (it starts as a follower). */
export type Role = 'leader' | 'follower';

/** What test/fixtures/crash-every-write-child.mjs takes. */
export interface MemberConfig {
  namespace: string;
  kubeconfig: string;
  name: string;
  identity: string;
  timing: unknown;
  capacity: { total: number };
  templates: unknown[];
  /** The append-only file its onStatus acknowledges terminal statuses into. */
  statusFile: string;
  /** SIGKILL itself right after the nth write of this meaning. */
  kill?: { meaning: string; nth: number };
}

type Line =
  | { kind: 'started' }
  | { kind: 'elected' }
  | { kind: 'answer'; id: number; status: TaskStatus }
  | { kind: 'refused'; id: number; code?: string; message: string }
  | { kind: 'killed'; meaning: string; taskId: string };

export type Answer = Extract<Line, { kind: 'answer' | 'refused' }>;

/** One runner of a pair in its own process: requests on its stdin, what it printed, its exit. */
export class PairMember {
  private readonly lines: Line[] = [];
  private readonly waiting = new Set<() => void>();
  private stderr = '';
  private exited = false;
  /** Whether the test stopped it (else an exit without a kill line is a crash). */
  stopped = false;
  readonly exit: Promise<NodeJS.Signals | null>;
  private readonly child;

  constructor(readonly config: MemberConfig) {
    const script = fileURLToPath(new URL('./fixtures/crash-every-write-child.mjs', import.meta.url));
    this.child = spawn(process.execPath, [script, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'pipe'] });
    let buffered = '';
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        this.lines.push(JSON.parse(buffered.slice(0, nl)) as Line);
        buffered = buffered.slice(nl + 1);
      }
      this.notify();
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    // a request written as it dies: the exit says so
    this.child.stdin.on('error', () => undefined);
    this.exit = new Promise((resolve) => this.child.on('exit', (_code, signal) => ((this.exited = true), this.notify(), resolve(signal))));
  }

  private notify(): void {
    for (const wake of [...this.waiting]) wake();
  }

  /** Resolves with the first line `pick` accepts, or with 'died' once the process has exited without one. */
  private next<T>(pick: (line: Line) => T | undefined): Promise<T | 'died'> {
    return new Promise((resolve) => {
      const check = () => {
        for (const line of this.lines) {
          const picked = pick(line);
          if (picked !== undefined) return (this.waiting.delete(check), resolve(picked));
        }
        if (this.exited) (this.waiting.delete(check), resolve('died'));
      };
      this.waiting.add(check);
      check();
    });
  }

  /** Resolves once the runner was created (and, with `elected`, won the election); rejects if it dies first or takes over 30 s. */
  async started(elected: boolean): Promise<void> {
    const ready = () => this.lines.some((l) => l.kind === 'started') && (!elected || this.lines.some((l) => l.kind === 'elected'));
    await waitFor(() => {
      if (ready()) return true;
      if (this.exited) throw new StopWaiting(`${this.config.identity} of ${this.config.name} exited before it ${elected ? 'led' : 'started'}: ${this.stderr}`);
      return false;
    }, 30_000, () => `${this.config.identity} of ${this.config.name} to ${elected ? 'lead' : 'start'} (${this.stderr})`);
  }

  /** Sends one request; its answer, or 'died' if the process exits before answering. */
  ask(id: number, request: { op: 'submit'; task: Task } | { op: 'cancel'; taskId: string }): Promise<Answer | 'died'> {
    if (!this.exited) this.child.stdin.write(`${JSON.stringify({ id, ...request })}\n`);
    return this.next((l) => ((l.kind === 'answer' || l.kind === 'refused') && l.id === id ? l : undefined));
  }

  /** What it wrote on stderr. */
  output(): string {
    return this.stderr;
  }

  /** `<identity> after <meaning> of <task id>` once it killed itself at its kill point. */
  killedLine(): string | undefined {
    const line = this.lines.find((l) => l.kind === 'killed');
    return line?.kind === 'killed' ? `${this.config.identity} after ${line.meaning} of ${line.taskId}` : undefined;
  }

  /** SIGKILLs it if it still runs; resolves once it exited. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (!this.exited) this.child.kill('SIGKILL');
    await this.exit;
  }
}
