import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { binaryCacheRoot, testenvRoot, toolsPackageDir } from '../env/paths.js';
import { runStep } from '../process/run-step.js';
import { TestenvError } from '../env/errors.js';
import { withLock } from '../process/lock.js';
import { GO_BUILD_FLAGS } from '../install/go-build.js';

/** client-go's own `leaderelection` on a Lease: the Go program the interop test and the benchmark run. */
function sourceDir(): string {
  return join(toolsPackageDir(), '..', 'packages', 'kubernetes', 'interop', 'client-go-elector');
}

/**
 * Builds the client-go elector with the installed Go, once per source version (a
 * digest of main.go and go.mod), into the binary cache beside the test servers'.
 * Resolves with the binary's path.
 */
export async function buildClientGoElector(): Promise<string> {
  const source = sourceDir();
  const digest = createHash('sha256')
    .update(readFileSync(join(source, 'main.go')))
    .update(readFileSync(join(source, 'go.mod')))
    .digest('hex')
    .slice(0, 12);
  const dir = join(binaryCacheRoot(), `client-go-elector-${digest}`);
  const binary = join(dir, 'client-go-elector');
  if (existsSync(binary)) return binary;
  return withLock(`${dir}.lock`, 20 * 60_000, async () => {
    if (existsSync(binary)) return binary;
    // built aside and renamed, so an interrupted build never leaves a half-written binary
    const staging = `${dir}.tmp-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    await runStep({
      step: 'build the client-go elector',
      command: 'go',
      args: ['build', '-mod=mod', ...GO_BUILD_FLAGS, '-ldflags=-s -w', '-o', join(staging, 'client-go-elector'), '.'],
      cwd: source,
      logFile: join(testenvRoot(), 'logs', `build-client-go-elector-${digest}.log`),
      // CGO_ENABLED=0 and the flags of the control plane's build (go-build.ts): client-go's packages, at the
      // versions that build pins, are then in Go's build cache already and only the link is left
      env: { ...process.env, GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'local', GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
    });
    try {
      renameSync(staging, dir);
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      if (!existsSync(binary)) throw new TestenvError(`could not move the client-go elector build into ${dir}`, { cause: error });
    }
    return binary;
  });
}

/** One line the Go program printed. */
export interface ClientGoEvent {
  /** STARTED; LEADER: it saw a (new) leader, `identity`, possibly itself; ELECTED; LOST. */
  type: 'STARTED' | 'LEADER' | 'ELECTED' | 'LOST';
  /** Wall clock of this host when the Go program printed it, milliseconds since the epoch. */
  at: number;
  /** With LEADER: the leader's holderIdentity. */
  identity?: string;
}

/** How to run one client-go candidate. Durations in Go syntax: `2s`, `300ms`. */
export interface ClientGoCandidateOptions {
  kubeconfig: string;
  namespace: string;
  /** The Lease's name. */
  lease: string;
  identity: string;
  leaseDuration: string;
  renewDeadline: string;
  retryPeriod: string;
  /** Where client-go's own log (klog, on stderr) goes: appended to this file. Default: this process's stderr. */
  logFile?: string;
}

/** A running client-go candidate; `events` fills as it prints. */
export class ClientGoCandidate {
  readonly events: ClientGoEvent[] = [];
  private readonly child: ChildProcess;
  private readonly waiters = new Set<() => void>();

  constructor(binary: string, options: ClientGoCandidateOptions) {
    const log = options.logFile === undefined ? undefined : openSync(options.logFile, 'a');
    try {
      this.child = spawn(
        binary,
        [
          `--kubeconfig=${options.kubeconfig}`,
          `--namespace=${options.namespace}`,
          `--lease=${options.lease}`,
          `--identity=${options.identity}`,
          `--lease-duration=${options.leaseDuration}`,
          `--renew-deadline=${options.renewDeadline}`,
          `--retry-period=${options.retryPeriod}`,
        ],
        { stdio: ['ignore', 'pipe', log ?? 'inherit'] },
      );
    } finally {
      if (log !== undefined) closeSync(log); // the child has its own copy
    }
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const [type, nanos, identity] = line.split(' ');
      if (type === 'STARTED' || type === 'LEADER' || type === 'ELECTED' || type === 'LOST') {
        this.events.push({ type, at: Number(BigInt(nanos!) / 1_000_000n), ...(identity === undefined ? {} : { identity }) });
      }
      this.waiters.forEach((w) => w());
    });
  }

  get leading(): boolean {
    const last = [...this.events].reverse().find((e) => e.type === 'ELECTED' || e.type === 'LOST');
    return last?.type === 'ELECTED';
  }

  /**
   * Resolves with the `count`-th event of `type` that satisfies `match` (past or future),
   * or rejects after `timeoutMs`.
   */
  event(type: ClientGoEvent['type'], timeoutMs: number, count = 1, match: (e: ClientGoEvent) => boolean = () => true): Promise<ClientGoEvent> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const seen = this.events.filter((e) => e.type === type && match(e));
        if (seen.length >= count) {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve(seen[count - 1]!);
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`client-go candidate printed no ${type} within ${timeoutMs} ms; saw ${JSON.stringify(this.events)}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  /** SIGTERM: a graceful stop; ReleaseOnCancel frees the Lease. */
  stop(): void {
    this.child.kill('SIGTERM');
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }

  exited(): Promise<void> {
    return this.child.exitCode !== null || this.child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => this.child.once('exit', () => resolve()));
  }
}
