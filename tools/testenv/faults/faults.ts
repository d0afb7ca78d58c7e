import { resolveTarget } from '../catalog.js';
import { startUnits, stopUnits } from '../process/unit.js';
import { refreshEnvFile } from '../orchestrate.js';

export interface StopOptions {
  /** SIGKILL simulates a crash; the default SIGTERM is a clean shutdown. */
  signal?: 'SIGTERM' | 'SIGKILL';
}

/**
 * Stops a server ("etcd", "zookeeper-ensemble") or one of its units ("kube-apiserver",
 * "zookeeper-ensemble-2"). Resolves when the process is gone.
 */
export async function stopServer(name: string, options: StopOptions = {}): Promise<void> {
  const target = resolveTarget(name);
  await stopUnits(target.units, options);
}

/**
 * Starts a stopped server or unit and resolves when it is healthy again (an ensemble
 * member: when it has rejoined the quorum). A running one is left alone.
 */
export async function startServer(name: string): Promise<void> {
  const target = resolveTarget(name);
  if (target.wholeServer) await target.server.up();
  else await startUnits(target.units);
  await refreshEnvFile();
}

/** Stops then starts a server or unit (SIGKILL first with `signal: 'SIGKILL'`). */
export async function restartServer(name: string, options: StopOptions = {}): Promise<void> {
  await stopServer(name, options);
  await startServer(name);
}
