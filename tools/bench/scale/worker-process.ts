import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { WaitTimeoutError } from '@rollcall/conformance';
import type { FromWorker, Request, ToWorker } from './protocol.js';

const ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url));

/** The coordinator's handle on one worker OS process (worker.ts). Every request is bounded. */
export class WorkerProcess {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  private exitedWith: string | undefined;

  private constructor(
    /** For messages: `worker 2`, `crash 1`. */
    readonly label: string,
    private readonly child: ChildProcess,
    onEvent: (event: Exclude<FromWorker, { kind: 'reply' | 'ready' }>) => void,
  ) {
    child.on('error', () => {}); // a send to a killed process fails; the exit says so
    child.on('message', (message: FromWorker) => {
      if (message.kind === 'reply') {
        const pending = this.pending.get(message.id);
        this.pending.delete(message.id);
        if (message.ok) pending?.resolve(message.value);
        else pending?.reject(new Error(`${label}: ${message.error}`));
      } else if (message.kind !== 'ready') onEvent(message);
    });
    child.once('exit', (code, signal) => {
      this.exitedWith = signal ?? `exit code ${code}`;
      for (const { reject } of this.pending.values()) reject(new Error(`${label} ended (${this.exitedWith})`));
      this.pending.clear();
    });
  }

  /** Forks a worker for `backend` (TypeScript through tsx, as the benchmark itself runs) and waits until it has loaded the backend and listens. */
  static async start(label: string, backend: string, onEvent: (event: Exclude<FromWorker, { kind: 'reply' | 'ready' }>) => void, timeoutMs: number): Promise<WorkerProcess> {
    const child = fork(ENTRY, [backend], { execArgv: ['--import', 'tsx', '--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const worker = new WorkerProcess(label, child, onEvent);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new WaitTimeoutError(`${label} to start`, timeoutMs)), timeoutMs);
      child.on('message', (message: FromWorker) => {
        if (message.kind === 'ready') (clearTimeout(timer), resolve());
      });
      child.once('exit', () => (clearTimeout(timer), reject(new Error(`${label} ended before it started`))));
    }).catch((err: unknown) => {
      worker.kill();
      throw err;
    });
    return worker;
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.exitedWith === undefined;
  }

  /** Sends a request; rejects when the worker reports a failure, ends, or does not answer within `timeoutMs`. */
  request<T>(request: Request, timeoutMs: number): Promise<T> {
    if (!this.alive) return Promise.reject(new Error(`${this.label} ended (${this.exitedWith})`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new WaitTimeoutError(`${this.label} to answer ${request.op}`, timeoutMs));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (value) => (clearTimeout(timer), resolve(value as T)),
        reject: (err) => (clearTimeout(timer), reject(err)),
      });
      this.child.send({ ...request, id } satisfies ToWorker);
    });
  }

  /** SIGKILL: the crash, or the end of a worker that would not close. */
  kill(): void {
    if (this.alive) this.child.kill('SIGKILL');
  }

  /** Resolves once the process has exited, at most `timeoutMs` from now. */
  async exited(timeoutMs: number): Promise<void> {
    if (!this.alive) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.child.once('exit', () => (clearTimeout(timer), resolve()));
    });
  }
}
