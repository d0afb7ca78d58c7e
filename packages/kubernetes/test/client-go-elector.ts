import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const SOURCE = new URL('../interop/client-go-elector/', import.meta.url).pathname;

/** Builds the client-go elector once per source version, cached beside the test servers' binaries. */
export function buildClientGoElector(): string {
  const digest = createHash('sha256')
    .update(readFileSync(join(SOURCE, 'main.go')))
    .update(readFileSync(join(SOURCE, 'go.mod')))
    .digest('hex')
    .slice(0, 12);
  const dir = join(homedir(), '.cache', 'rollcall', 'bin', `client-go-elector-${digest}`);
  const binary = join(dir, 'client-go-elector');
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  execFileSync('go', ['build', '-mod=mod', '-trimpath', '-ldflags=-s -w', '-o', binary, '.'], { cwd: SOURCE, stdio: 'inherit', env: { ...process.env, GOFLAGS: '-mod=mod' } });
  return binary;
}

export interface GoEvent {
  type: 'STARTED' | 'ELECTED' | 'LOST';
  /** Wall clock of this host, milliseconds. */
  at: number;
}

/** A running client-go candidate; `events` fills as it prints. */
export class ClientGoCandidate {
  readonly events: GoEvent[] = [];
  private readonly child: ChildProcess;
  private readonly waiters = new Set<() => void>();

  constructor(binary: string, args: { kubeconfig: string; namespace: string; lease: string; identity: string; leaseDuration: string; renewDeadline: string; retryPeriod: string }) {
    this.child = spawn(binary, [
      `--kubeconfig=${args.kubeconfig}`,
      `--namespace=${args.namespace}`,
      `--lease=${args.lease}`,
      `--identity=${args.identity}`,
      `--lease-duration=${args.leaseDuration}`,
      `--renew-deadline=${args.renewDeadline}`,
      `--retry-period=${args.retryPeriod}`,
    ], { stdio: ['ignore', 'pipe', 'inherit'] });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const [type, nanos] = line.split(' ');
      if (type === 'STARTED' || type === 'ELECTED' || type === 'LOST') this.events.push({ type, at: Number(BigInt(nanos!) / 1_000_000n) });
      this.waiters.forEach((w) => w());
    });
  }

  get leading(): boolean {
    const last = [...this.events].reverse().find((e) => e.type !== 'STARTED');
    return last?.type === 'ELECTED';
  }

  /** Resolves when an event of `type` has been printed (at least `count` of them), or rejects after `timeoutMs`. */
  waitFor(type: GoEvent['type'], timeoutMs: number, count = 1): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.events.filter((e) => e.type === type).length >= count) {
          clearTimeout(timer);
          this.waiters.delete(check);
          resolve();
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
    return this.child.exitCode !== null ? Promise.resolve() : new Promise((resolve) => this.child.once('exit', () => resolve()));
  }
}
