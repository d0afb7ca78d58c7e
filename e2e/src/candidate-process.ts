import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { SPEC_VARIABLE, type CandidateCommand, type CandidateEvent, type CandidateSpec } from './protocol.js';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';

/** One process's life on the timeline: what it reported and what was done to it. */
export interface IncarnationRecord {
  name: string;
  incarnation: number;
  pid: number;
  startedAt: number;
  /** Everything it reported, in the order it reported it. */
  events: CandidateEvent[];
  /** SIGSTOP to SIGCONT; `to` is undefined while stopped. */
  pauses: { from: number; to: number | undefined }[];
  killedAt: number | undefined;
  /** When the coordinator asked it to shut down. */
  shutdownAt: number | undefined;
  exitedAt: number | undefined;
  exit: { code: number | null; signal: string | null } | undefined;
  /** Its stderr (the registry's warnings and errors). */
  logFile: string;
}

/** The compiled candidate entry, found from this package's root so it works from `src` (tests) and from `dist`. */
export function candidateEntry(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === '@rollcall/e2e') break;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('[rollcall] [e2e] cannot find the @rollcall/e2e package root');
    dir = parent;
  }
  const entry = join(dir, 'dist', 'candidate.js');
  if (!existsSync(entry)) throw new Error(`[rollcall] [e2e] ${entry} is missing: build @rollcall/e2e first (npx nx run @rollcall/e2e:build)`);
  return entry;
}

/**
 * The coordinator's handle on one candidate process (one incarnation): its
 * event stream, and the signals the soak sends it. Every signal is stamped on
 * the same CLOCK_MONOTONIC as the candidate's own events.
 */
export class CandidateProcess {
  readonly record: IncarnationRecord;
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private readonly waiters = new Set<() => void>();

  constructor(spec: CandidateSpec, logFile: string, private readonly onEvent: (process: CandidateProcess, event: CandidateEvent) => void) {
    this.child = spawn(process.execPath, [candidateEntry()], {
      env: { ...process.env, [SPEC_VARIABLE]: JSON.stringify(spec) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.record = {
      name: spec.name,
      incarnation: spec.incarnation,
      pid: this.child.pid!,
      startedAt: monotonicMs(),
      events: [],
      pauses: [],
      killedAt: undefined,
      shutdownAt: undefined,
      exitedAt: undefined,
      exit: undefined,
      logFile,
    };
    this.child.stderr!.pipe(createWriteStream(logFile, { flags: 'a' }));
    // Writes to a process that was just killed fail with EPIPE: that is the kill, not an error.
    this.child.stdin!.on('error', () => {});
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const event = JSON.parse(line) as CandidateEvent;
      this.record.events.push(event);
      this.onEvent(this, event);
      this.waiters.forEach((wake) => wake());
    });
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.record.exitedAt = monotonicMs();
        this.record.exit = { code, signal };
        this.waiters.forEach((wake) => wake());
        resolve();
      }),
    );
  }

  get name(): string {
    return this.record.name;
  }

  get alive(): boolean {
    return this.record.exit === undefined;
  }

  get stopped(): boolean {
    return this.record.pauses.at(-1)?.to === undefined && this.record.pauses.length > 0;
  }

  send(command: CandidateCommand): void {
    if (this.alive) this.child.stdin!.write(`${JSON.stringify(command)}\n`);
  }

  /**
   * Resolves with the first reported event (past or future) that matches;
   * rejects when the process exits first or after `timeoutMs`.
   */
  event<T extends CandidateEvent['type']>(type: T, timeoutMs: number, match: (e: Extract<CandidateEvent, { type: T }>) => boolean = () => true): Promise<Extract<CandidateEvent, { type: T }>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.record.events.find((e): e is Extract<CandidateEvent, { type: T }> => e.type === type && match(e as Extract<CandidateEvent, { type: T }>));
        if (found) return done(() => resolve(found));
        if (!this.alive) done(() => reject(new Error(`${this.describe()} exited (${JSON.stringify(this.record.exit)}) before reporting ${type}; see ${this.record.logFile}`)));
      };
      const timer = setTimeout(() => done(() => reject(new Error(`${this.describe()} reported no ${type} within ${timeoutMs} ms; see ${this.record.logFile}`))), timeoutMs);
      const done = (settle: () => void) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        settle();
      };
      this.waiters.add(check);
      check();
    });
  }

  /** SIGKILL (a stopped process dies too); resolves once it is gone. */
  async kill(): Promise<void> {
    if (this.alive) {
      this.record.killedAt = monotonicMs();
      this.child.kill('SIGKILL');
    }
    await this.exited;
  }

  /** SIGSTOP: the process stops running, its sockets stay open. */
  pause(): void {
    if (!this.alive || this.stopped) return;
    this.record.pauses.push({ from: monotonicMs(), to: undefined });
    this.child.kill('SIGSTOP');
  }

  /** SIGCONT after `pause()`. */
  resume(): void {
    const pause = this.record.pauses.at(-1);
    if (!this.alive || !pause || pause.to !== undefined) return;
    this.child.kill('SIGCONT');
    pause.to = monotonicMs();
  }

  /** Asks it to close its registry and exit; SIGKILLs it (a failure, recorded as such) if it has not exited within `timeoutMs`. */
  async shutdown(timeoutMs: number): Promise<boolean> {
    if (!this.alive) return true;
    this.record.shutdownAt = monotonicMs();
    this.send({ op: 'shutdown' });
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([this.exited.then(() => true), new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)))]);
    clearTimeout(timer);
    if (!inTime) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
    return inTime;
  }

  describe(): string {
    return `${this.record.name}#${this.record.incarnation} (pid ${this.record.pid})`;
  }
}
