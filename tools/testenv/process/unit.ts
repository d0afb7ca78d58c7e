import { daemonPid, startDaemon, stopDaemon, type DaemonCommand } from './daemon.js';
import { assertPortsFree, waitForPortsFree } from './ports.js';
import { unitLogFile } from '../env/paths.js';
import { StopWaiting, waitFor } from '@rollcall/conformance';
import { logTailBlock, serverWait } from './server-wait.js';

/** One server process: a ZooKeeper member, an etcd, kube-apiserver, ... */
export interface Unit {
  /** Unique name, used for its directory, log, pid file and by the fault helpers. */
  name: string;
  /** Every port it listens on (all on 127.0.0.1). */
  ports: number[];
  /** Idempotent preparation before a start: config files, an initialised data dir. */
  prepare(): Promise<void>;
  /** The command line of the server. */
  command(): DaemonCommand;
  /** True when the server answers as the real thing would. */
  isHealthy(): Promise<boolean>;
  /** How long a start may take until healthy. */
  startTimeoutMs: number;
  /** How long a clean stop may take before SIGKILL (default 15 s). */
  stopGraceMs?: number;
  /** The signal of a clean stop (default SIGTERM); PostgreSQL's fast shutdown is SIGINT. */
  stopSignal?: NodeJS.Signals;
}

/** The pid of a unit's process when it runs. */
export function unitPid(unit: Unit): number | undefined {
  return daemonPid(unit.name);
}

/**
 * Starts units that are not running and waits until all are healthy. The processes are
 * spawned first and awaited together, because members of an ensemble only become
 * healthy once a quorum of them runs. Running units are left alone (idempotent).
 */
export async function startUnits(units: readonly Unit[]): Promise<void> {
  for (const unit of units) {
    if (daemonPid(unit.name) !== undefined) continue;
    await assertPortsFree(unit.name, unit.ports);
    await unit.prepare();
    startDaemon(unit.name, unit.command());
  }
  await Promise.all(units.map((unit) => waitUntilHealthy(unit)));
}

/** Waits until a started unit is healthy; fails at once with its log tail if it exits. */
export async function waitUntilHealthy(unit: Unit, timeoutMs = unit.startTimeoutMs): Promise<void> {
  const logFile = unitLogFile(unit.name);
  await waitFor(
    async () => {
      if (daemonPid(unit.name) === undefined) {
        throw new StopWaiting(`${unit.name} exited before it became healthy\n${logTailBlock(logFile)}`);
      }
      return unit.isHealthy();
    },
    timeoutMs,
    serverWait({ what: `${unit.name} to become healthy`, logFile, intervalMs: 150 }),
  );
}

/**
 * Stops units (their stop signal, SIGTERM unless they name another; then SIGKILL after a grace period), in reverse order, and resolves
 * once their ports are closed too, so a test sees "connection refused" right after.
 */
export async function stopUnits(units: readonly Unit[], options: { signal?: 'SIGTERM' | 'SIGKILL' } = {}): Promise<void> {
  for (const unit of [...units].reverse()) {
    const wasRunning = daemonPid(unit.name) !== undefined;
    const signal = options.signal === 'SIGKILL' ? 'SIGKILL' : (unit.stopSignal ?? 'SIGTERM');
    await stopDaemon(unit.name, { signal, graceMs: unit.stopGraceMs });
    if (wasRunning) await waitForPortsFree(unit.ports, 10_000);
  }
}
