import { join } from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { SERVERS, SERVER_EXECUTABLES, serversNamed } from './catalog.js';
import type { Server } from './servers/server.js';
import { ENV_SCHEMA_VERSION, writeTestEnv, type TestEnv } from './env/env-file.js';
import { envFilePath, testenvRoot } from './env/paths.js';
import { withLock } from './process/lock.js';
import { daemonPid } from './process/daemon.js';
import { stopUnits } from './process/unit.js';
import { processesUsingRoot } from './process/strays.js';
import { setTimeout as delay } from 'node:timers/promises';
import { TestenvError } from './env/errors.js';

/** Long enough for a cold Go build of Kubernetes by another process holding the lock. */
const LOCK_TIMEOUT_MS = 80 * 60_000;
const lockDir = () => join(testenvRoot(), 'lock');

function say(message: string): void {
  if (process.env.ROLLCALL_TESTENV_QUIET !== '1') console.error(`[testenv] ${message}`);
}

/** True when every unit of a server has a live process. */
export function isServerRunning(server: Server): boolean {
  return server.units().every((u) => daemonPid(u.name) !== undefined);
}

/** Rewrites the env file with a section for every server that is running now. */
export async function refreshEnvFile(): Promise<string> {
  const env: TestEnv = { schemaVersion: ENV_SCHEMA_VERSION, root: testenvRoot() };
  for (const server of SERVERS) {
    if (isServerRunning(server)) (env as Record<string, unknown>)[server.envKey] = await server.describe();
  }
  return writeTestEnv(env);
}

/**
 * Brings servers up (all when `names` is empty): installs what is missing, starts what is
 * not running, waits until healthy, writes the env file. Idempotent and safe to call from
 * several processes at once. Returns the env file path.
 */
export async function up(names: readonly string[] = []): Promise<string> {
  const servers = serversNamed(names);
  return withLock(lockDir(), LOCK_TIMEOUT_MS, async () => {
    const started = Date.now();
    // installs one at a time: apt-get holds a lock, and a Go build takes both cores
    for (const server of servers) await server.install();
    const results = await Promise.allSettled(
      servers.map(async (server) => {
        const t = Date.now();
        const wasRunning = isServerRunning(server);
        await server.up();
        say(`${server.name} ${wasRunning ? 'already up' : 'up'} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
      }),
    );
    const failures = results.flatMap((r, i) => (r.status === 'rejected' ? [{ server: servers[i]!.name, error: r.reason as Error }] : []));
    if (failures.length > 0) {
      await refreshEnvFile();
      // every failure, not just the first: each says what failed and where its log is
      throw new TestenvError(`up failed for ${failures.map((f) => f.server).join(', ')}:\n` + failures.map((f) => `* ${f.error.message.replace(/^\[testenv\] /, "")}`).join('\n'));
    }
    const file = await refreshEnvFile();
    say(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s; env file: ${file}`);
    return file;
  });
}

/** Stops servers (all when `names` is empty) and, for a full `down`, any stray server process under the root. */
export async function down(names: readonly string[] = []): Promise<void> {
  const servers = serversNamed(names);
  await withLock(lockDir(), LOCK_TIMEOUT_MS, async () => {
    // reverse order: the Kubernetes components stop before their etcd
    for (const server of [...servers].reverse()) {
      await stopUnits(server.units());
      await server.afterDown?.();
      say(`${server.name} down`);
    }
    if (names.length === 0) await killStrays();
    await refreshEnvFile();
  });
}

async function killStrays(): Promise<void> {
  const strays = processesUsingRoot(SERVER_EXECUTABLES);
  for (const stray of strays) {
    say(`stopping stray server process ${stray.pid}: ${stray.commandLine}`);
    try {
      process.kill(stray.pid, 'SIGTERM');
    } catch {
      // gone already
    }
  }
  const deadline = Date.now() + 15_000;
  while (processesUsingRoot(SERVER_EXECUTABLES).length > 0 && Date.now() < deadline) await delay(100);
  for (const stray of processesUsingRoot(SERVER_EXECUTABLES)) {
    try {
      process.kill(stray.pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  const left = processesUsingRoot(SERVER_EXECUTABLES);
  if (left.length > 0) throw new TestenvError(`processes still running after down: ${left.map((p) => p.pid).join(', ')}`);
}

export interface UnitStatus {
  server: string;
  unit: string;
  pid?: number;
  healthy: boolean;
}

/** Each unit's pid and health right now. */
export async function status(): Promise<UnitStatus[]> {
  const rows: UnitStatus[] = [];
  for (const server of SERVERS) {
    for (const unit of server.units()) {
      const pid = daemonPid(unit.name);
      const healthy = pid !== undefined && (await unit.isHealthy().catch(() => false));
      rows.push({ server: server.name, unit: unit.name, pid, healthy });
    }
  }
  return rows;
}

/** The env file's content, if `up` has written one. */
export function currentEnvFile(): TestEnv | undefined {
  const file = envFilePath();
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as TestEnv) : undefined;
}
