import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRegistry, type Registry } from '@rollcall/core';
import { runProcess, type ProcessResult } from '@rollcall/tools/testenv';

/** The built binary, as `npm ci && npm run build` leaves it (the bin link's target imports it). */
export const BIN = fileURLToPath(new URL('../bin/rollcall.js', import.meta.url));

export type RunResult = ProcessResult;

/** Environment without REGISTRY_* variables of the test runner's own shell. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('REGISTRY_')));
  return { ...env, ...extra };
}

/** Runs `rollcall args...` to its end (bounded), with `input` on stdin. */
export function run(args: string[], options: { env?: Record<string, string>; input?: string; timeoutMs?: number; cwd?: string } = {}): Promise<RunResult> {
  return runProcess(process.execPath, [BIN, ...args], { cwd: options.cwd, env: cleanEnv(options.env), input: options.input, timeoutMs: options.timeoutMs ?? 30_000 });
}

/** A long-running `rollcall` whose output can be waited on. */
export class Running {
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly waiters = new Set<() => void>();

  constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (c: string) => ((this.stdout += c), this.waiters.forEach((w) => w())));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => ((this.stderr += c), this.waiters.forEach((w) => w())));
    this.exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  }

  /** Starts `rollcall args...`; with `stdin: true` its stdin is a pipe the test writes to (`child.stdin`). */
  static start(args: string[], env: Record<string, string> = {}, options: { stdin?: boolean } = {}): Running {
    return new Running(spawn(process.execPath, [BIN, ...args], { env: cleanEnv(env), stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] }));
  }

  /** Resolves once `test(stdout, stderr)` holds; rejects after `timeoutMs` with what was printed. */
  until<T>(what: string, test: (stdout: string, stderr: string) => T | undefined | false, timeoutMs = 30_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const value = test(this.stdout, this.stderr);
        if (value !== undefined && value !== false) {
          this.waiters.delete(check);
          clearTimeout(timer);
          resolve(value);
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`${what}: not within ${timeoutMs} ms; stdout: ${this.stdout}\nstderr: ${this.stderr}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A temp sqlite file and a registry on it held by the test itself (the library, not the CLI), with short timings. */
export async function sqliteFixture(cluster = 'test'): Promise<{ dir: string; path: string; args: string[]; open(identity: string): Promise<Registry>; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-cli-test-'));
  const path = join(dir, 'registry.db');
  const opened: Registry[] = [];
  return {
    dir,
    path,
    args: ['-t', 'sqlite', '-o', `registry.sqlite.path=${path}`, '-c', cluster],
    async open(identity: string) {
      const registry = await createRegistry({
        type: 'sqlite',
        cluster,
        identity,
        sqlite: { path },
        election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
        lock: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 500 },
        member: { heartbeatIntervalMs: 500, leaseDurationMs: 3000 },
      });
      opened.push(registry);
      return registry;
    },
    async close() {
      await Promise.all(opened.map((r) => r.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
