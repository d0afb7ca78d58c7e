import { ChildHandle, packageFile } from '@rollcall/child-harness';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';
import { type CandidateHandle, type CandidateRunner, type IncarnationRecord, newIncarnation, type StampedEvent } from './candidate-handle.js';
import { SPEC_VARIABLE, type CandidateCommand, type CandidateEvent, type CandidateSpec } from './protocol.js';

/** The compiled candidate entry, found from this package's root so it works from `src` (tests) and from `dist`. */
export function candidateEntry(): string {
  return packageFile(import.meta.url, '@rollcall/e2e', 'dist/candidate.js', 'npx nx run @rollcall/e2e:build');
}

/** Which program a {@link CandidateProcess} runs, and how it is told its spec. Default: the soak's candidate. */
export interface CandidateProgram {
  /** The compiled entry. */
  entry: string;
  /** The environment variable that carries the spec as JSON. */
  specVariable: string;
}

/**
 * The coordinator's handle on one candidate process (one incarnation), on the
 * child-process harness: its event stream, and the signals the soak sends it.
 * Every signal is stamped on the same CLOCK_MONOTONIC as the candidate's own
 * events. The channel is JSON lines on stdin and stdout: a pipe is written
 * synchronously on Linux, so what a candidate reported before a SIGKILL is here.
 * `C` and `E` are its program's commands (which must include `{ op: 'shutdown' }`) and events (the soak candidate's by
 * default; the failover chaos's processes have their own).
 */
export class CandidateProcess<C extends { op: string } = CandidateCommand, E extends StampedEvent = CandidateEvent> implements CandidateHandle<C, E> {
  readonly record: IncarnationRecord<E>;
  private readonly child: ChildHandle<C, E>;

  constructor(
    spec: Pick<CandidateSpec, 'name' | 'incarnation'>,
    logFile: string,
    onEvent: (process: CandidateHandle<C, E>, event: E) => void,
    program: CandidateProgram = { entry: candidateEntry(), specVariable: SPEC_VARIABLE },
  ) {
    this.child = new ChildHandle({
      entry: program.entry,
      env: { ...process.env, [program.specVariable]: JSON.stringify(spec) },
      transport: 'lines',
      stderr: { file: logFile },
      label: `${spec.name}#${spec.incarnation}`,
    });
    this.record = newIncarnation<E>(spec, this.child.pid, logFile);
    this.child.onEvent((event) => {
      this.record.events.push(event);
      onEvent(this, event);
    });
    void this.child.exited.then((exit) => {
      this.record.exitedAt = monotonicMs();
      this.record.exit = exit;
    });
  }

  get name(): string {
    return this.record.name;
  }

  get alive(): boolean {
    return this.child.alive;
  }

  get stopped(): boolean {
    return this.record.pauses.at(-1)?.to === undefined && this.record.pauses.length > 0;
  }

  send(command: C): void {
    this.child.tell(command);
  }

  /**
   * Resolves with the first reported event (past or future) that matches;
   * rejects when the process exits first or after `timeoutMs`.
   */
  async event<T extends E['type']>(type: T, timeoutMs: number, match: (e: Extract<E, { type: T }>) => boolean = () => true): Promise<Extract<E, { type: T }>> {
    try {
      const { event } = await this.child.event((e): e is Extract<E, { type: T }> => e.type === type && match(e as Extract<E, { type: T }>), timeoutMs, type);
      return event;
    } catch (err) {
      throw new Error(`${this.describe()}: ${(err as Error).message}; see ${this.record.logFile}`, { cause: err });
    }
  }

  /** SIGKILL (a stopped process dies too); resolves once it is gone. */
  async kill(): Promise<void> {
    if (this.alive) this.record.killedAt = monotonicMs();
    await this.child.kill();
  }

  /** SIGSTOP: the process stops running, its sockets stay open. */
  pause(): void {
    if (!this.alive || this.stopped) return;
    this.record.pauses.push({ from: monotonicMs(), to: undefined });
    this.child.signal('SIGSTOP');
  }

  /** SIGCONT after `pause()`. */
  resume(): void {
    const pause = this.record.pauses.at(-1);
    if (!this.alive || !pause || pause.to !== undefined) return;
    this.child.signal('SIGCONT');
    pause.to = monotonicMs();
  }

  /** Asks it to close its registry and exit; SIGKILLs it (a failure, recorded as such) if it has not exited within `timeoutMs`. */
  async shutdown(timeoutMs: number): Promise<boolean> {
    if (!this.alive) return true;
    this.record.shutdownAt = monotonicMs();
    this.send({ op: 'shutdown' } as C);
    const inTime = await this.child.exitedWithin(timeoutMs);
    if (!inTime) await this.child.kill();
    return inTime;
  }

  describe(): string {
    return `${this.record.name}#${this.record.incarnation} (pid ${this.record.pid})`;
  }
}

/** The soak's own runner: each incarnation a child process of the coordinator. */
export const PROCESS_RUNNER: CandidateRunner = {
  start: (spec, logFile, onEvent) => Promise.resolve(new CandidateProcess(spec, logFile, onEvent)),
};
