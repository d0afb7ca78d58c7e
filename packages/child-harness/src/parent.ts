import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { lineChannel, type MessageChannel } from './channel.js';
import { fromWireFailure, isControl, type ChildMessage, type ParentMessage } from './protocol.js';
import { systemClock, type Timer } from '@rollcall/core';
import { WaitTimeoutError } from './wait-timeout-error.js';

/** How much of a child's stderr {@link ChildHandle.stderr} keeps, characters: its last words, not a log. */
const STDERR_KEPT = 64 * 1024;

/** How to start a child process and talk to it. */
export interface ChildOptions {
  /** The script the child runs (compiled JavaScript, or TypeScript with `execArgv: ['--import', 'tsx']`). */
  entry: string;
  /** Arguments after the entry. Default none. */
  args?: readonly string[];
  /** Node flags of the child. Default none: not the parent's (a test runner's loader flags do not belong in a plain child). */
  execArgv?: readonly string[];
  /** The child's environment. Default the parent's. */
  env?: NodeJS.ProcessEnv;
  /**
   * `ipc`: the fork IPC channel (any value `serialization` can carry; stdin and
   * stdout stay free). `lines`: JSON lines on the child's stdin and stdout,
   * written synchronously on Linux, so nothing reported is lost to a SIGKILL.
   * Default `ipc`.
   */
  transport?: 'ipc' | 'lines';
  /** How the IPC channel serializes (`ipc` only). Default `json`. */
  serialization?: 'json' | 'advanced';
  /** The child's stdout when the transport leaves it free. Default `inherit`. */
  stdout?: 'inherit' | 'ignore';
  /** The child's stderr: the parent's, kept in {@link ChildHandle.stderr} (`pipe`, its last 64 KiB), or appended to a file. Default `inherit`. */
  stderr?: 'inherit' | 'ignore' | 'pipe' | { file: string };
  /** Names the child in errors: `the crash child`, `worker 2`. Default `the child process`. */
  label?: string;
}

/** How a child process ended. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * The parent's handle on one child process run through this harness: starting
 * it, waiting for it to be ready, commands answered by a reply, the events it
 * reports (kept, so a wait can find one that already arrived), signals and
 * its exit. The child's side is {@link serveParent}.
 */
export class ChildHandle<Command = unknown, Event = unknown> {
  /** The channel the control messages use; other traffic (the IPC store) may share it. */
  readonly channel: MessageChannel;
  /** Every event the child reported, with the parent's `systemClock.now()` at arrival. */
  readonly events: { event: Event; at: number }[] = [];
  /** How the process ended, once it has. */
  exit: ChildExit | undefined;
  /** Its stderr so far (the last 64 KiB), with `stderr: 'pipe'`. */
  stderr = '';
  /** Resolves once the process has exited. */
  readonly exited: Promise<ChildExit>;
  readonly label: string;
  private readonly process: ChildProcess;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  private readonly listeners = new Set<(event: Event, at: number) => void>();
  private readonly wakers = new Set<() => void>();
  private readiness: { ready: boolean; failure: Error | undefined } = { ready: false, failure: undefined };

  constructor(options: ChildOptions) {
    this.label = options.label ?? 'the child process';
    const transport = options.transport ?? 'ipc';
    const stderr = options.stderr ?? 'inherit';
    const stdio: StdioOptions =
      transport === 'lines'
        ? ['pipe', 'pipe', typeof stderr === 'object' ? 'pipe' : stderr]
        : ['ignore', options.stdout ?? 'inherit', typeof stderr === 'object' ? 'pipe' : stderr, 'ipc'];
    this.process = spawn(process.execPath, [...(options.execArgv ?? []), options.entry, ...(options.args ?? [])], {
      env: options.env ?? process.env,
      stdio,
      ...(transport === 'ipc' ? { serialization: options.serialization ?? 'json' } : {}),
    });
    // After a SIGKILL, sends in flight fail with EPIPE; that is the kill, not a failure of the parent.
    this.process.on('error', () => {});
    if (typeof stderr === 'object') this.process.stderr!.pipe(createWriteStream(stderr.file, { flags: 'a' }));
    else if (stderr === 'pipe') this.process.stderr!.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-STDERR_KEPT)));
    this.channel = transport === 'lines' ? lineChannel(this.process.stdout!, this.process.stdin!) : (this.process as unknown as MessageChannel);
    this.channel.on('message', (raw) => this.receive(raw));
    this.exited = new Promise((resolve) =>
      this.process.once('exit', (code, signal) => {
        this.exit = { code, signal };
        for (const { reject } of this.pending.values()) reject(new Error(`${this.label} ended (${this.describeExit()})`));
        this.pending.clear();
        this.wake();
        resolve(this.exit);
      }),
    );
  }

  /** Starts a child and waits until it says it is ready (see {@link ready}); kills it if it does not. */
  static async start<C, E>(options: ChildOptions, readyTimeoutMs: number, init?: unknown): Promise<ChildHandle<C, E>> {
    const child = new ChildHandle<C, E>(options);
    if (init !== undefined) child.init(init);
    try {
      await child.ready(readyTimeoutMs);
    } catch (err) {
      await child.kill();
      throw err;
    }
    return child;
  }

  get pid(): number {
    return this.process.pid!;
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  /** Sends the child its `init` (the first thing it reads, when it takes one). */
  init(init: unknown): void {
    this.post({ ch: 'ctl', kind: 'init', init });
  }

  /** Resolves once the child reports `ready`; rejects with its `fatal` error, when it exits first, or after `timeoutMs`. */
  ready(timeoutMs: number): Promise<void> {
    return this.until(() => this.readiness.failure ?? this.readiness.ready, timeoutMs, 'to be ready').then((found) => {
      if (found instanceof Error) throw found;
    });
  }

  /** Sends a command; resolves with the child's answer, rejects with its failure, when it ends, or after `timeoutMs`. */
  request<T = unknown>(command: Command, timeoutMs: number): Promise<T> {
    if (!this.alive) return Promise.reject(new Error(`${this.label} ended (${this.describeExit()})`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = systemClock.setTimeout(() => {
        this.pending.delete(id);
        reject(new WaitTimeoutError(`${this.label} to answer ${describeCommand(command)}`, timeoutMs));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (value) => (timer.cancel(), resolve(value as T)),
        reject: (err) => (timer.cancel(), reject(err)),
      });
      this.post({ ch: 'ctl', kind: 'command', id, command }, (err) => err && this.pending.get(id)?.reject(err));
    });
  }

  /** Sends a command that is not answered; nothing, when the child is gone. */
  tell(command: Command): void {
    if (this.alive) this.post({ ch: 'ctl', kind: 'command', command });
  }

  /** Calls `listener` with every event as it arrives. Returns the unsubscribe function. */
  onEvent(listener: (event: Event, at: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Resolves with the first reported event (past or future) that matches;
   * rejects when the child exits first or after `timeoutMs`.
   */
  event<E extends Event>(match: (event: Event) => event is E, timeoutMs: number, what: string): Promise<{ event: E; at: number }>;
  event(match: (event: Event) => boolean, timeoutMs: number, what: string): Promise<{ event: Event; at: number }>;
  async event(match: (event: Event) => boolean, timeoutMs: number, what: string): Promise<{ event: Event; at: number }> {
    const found = await this.until(() => this.events.find((e) => match(e.event)), timeoutMs, `to report ${what}`);
    return found;
  }

  /** SIGKILLs the child (a stopped one dies too) and resolves once it is gone; returns the parent's `systemClock.now()` when the signal was sent. */
  async kill(): Promise<number> {
    const at = systemClock.now();
    if (this.alive) this.process.kill('SIGKILL');
    await this.exited;
    return at;
  }

  /** Sends `signal` (SIGSTOP, SIGCONT, SIGTERM) when the child is alive. */
  signal(signal: NodeJS.Signals): void {
    if (this.alive) this.process.kill(signal);
  }

  /** Resolves true once the child has exited, false if it has not within `timeoutMs`. */
  async exitedWithin(timeoutMs: number): Promise<boolean> {
    if (!this.alive) return true;
    let timer: Timer | undefined;
    const inTime = await Promise.race([this.exited.then(() => true), new Promise<false>((resolve) => (timer = systemClock.setTimeout(() => resolve(false), timeoutMs)))]);
    timer?.cancel();
    return inTime;
  }

  /** `exit code 1`, `SIGKILL`, or `running`. */
  describeExit(): string {
    if (!this.exit) return 'running';
    return this.exit.signal ?? `exit code ${this.exit.code}`;
  }

  private post(message: ParentMessage<unknown, Command>, callback?: (err: Error | null) => void): void {
    try {
      this.channel.send(message, callback ?? (() => {}));
    } catch (err) {
      callback?.(err as Error);
    }
  }

  private receive(raw: unknown): void {
    if (!isControl(raw)) return;
    const message = raw as ChildMessage<Event>;
    if (message.kind === 'event') {
      const at = systemClock.now();
      this.events.push({ event: message.event, at });
      for (const listener of [...this.listeners]) listener(message.event, at);
    } else if (message.kind === 'reply') {
      const pending = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.ok) pending?.resolve(message.value);
      else pending?.reject(fromWireFailure(message.error, `${this.label}: `));
    } else if (message.kind === 'ready') this.readiness.ready = true;
    else if (message.kind === 'fatal') this.readiness.failure = fromWireFailure(message.error, `${this.label} failed to start: `);
    this.wake();
  }

  private wake(): void {
    for (const wake of [...this.wakers]) wake();
  }

  /** Resolves with `check()` once it is truthy, re-checked on every message and at the exit. */
  private until<T>(check: () => T | undefined | false, timeoutMs: number, what: string): Promise<NonNullable<T>> {
    return new Promise((resolve, reject) => {
      const done = (settle: () => void) => {
        timer.cancel();
        this.wakers.delete(test);
        settle();
      };
      const test = () => {
        const found = check();
        if (found) return done(() => resolve(found as NonNullable<T>));
        if (!this.alive) done(() => reject(new Error(`${this.label} ended (${this.describeExit()}) while waiting for it ${what}`)));
      };
      const timer = systemClock.setTimeout(() => done(() => reject(new WaitTimeoutError(`${this.label} ${what}`, timeoutMs))), timeoutMs);
      this.wakers.add(test);
      test();
    });
  }
}

function describeCommand(command: unknown): string {
  const op = (command as { op?: unknown } | undefined)?.op;
  return typeof op === 'string' ? op : 'a command';
}
