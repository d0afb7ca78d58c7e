import { resolveTarget } from './catalog.js';
import { startUnits, stopUnits } from './unit.js';
import { refreshEnvFile } from './orchestrate.js';
import { zookeeperMode } from './four-letter-word.js';
import { ensembleMembers } from './servers/zookeeper-ensemble.js';
import type { ZookeeperEnsembleMember } from './env-file.js';
import { waitFor } from '@rollcall/conformance';
import { serverWait } from './server-wait.js';
import { TestenvError } from './errors.js';

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

/** The units that watch kube-apiserver through informers and act on pods: controllers, scheduler, kwok (the fake nodes' kubelet). */
const INFORMER_UNITS = ['kube-controller-manager', 'kube-scheduler', 'kwok'];

/**
 * Restarts kube-apiserver (as {@link restartServer}), then the controller manager, the
 * scheduler and kwok, for tests that need pods handled again at once (scheduled, run by kwok,
 * a new namespace's default service account, a Service's EndpointSlices). While a new API
 * server's authorizer warms up it refuses their informers' watches, and client-go backs off
 * with jitter: the controller manager's pod watch resumed 71 s after a restart, the
 * scheduler's after 18 s (CI, 2026-12-05), kwok started pods 33 s late (a pod-runner test) —
 * longer than a test case. Restarted, they list afresh. kwok's stage delays start again.
 */
export async function restartApiServerAndControllers(options: StopOptions = {}): Promise<void> {
  await restartServer('kube-apiserver', options);
  await restartKubeControllers();
}

/** Restarts the controller manager, the scheduler and kwok: after kube-apiserver was down, so that they list afresh (see {@link restartApiServerAndControllers}). */
export async function restartKubeControllers(): Promise<void> {
  for (const unit of INFORMER_UNITS) await restartServer(unit);
}

/** The ensemble member that currently leads, or undefined when none does (e.g. mid-election). */
export async function zookeeperEnsembleLeader(): Promise<ZookeeperEnsembleMember | undefined> {
  const modes = await Promise.all(
    ensembleMembers().map(async (m) => ({ member: m, mode: await zookeeperMode(m.host, m.clientPort).catch(() => undefined) })),
  );
  return modes.find((m) => m.mode === 'leader')?.member;
}

/** Waits (bounded) until some member other than `excludingId` leads, and returns it. */
export async function waitForZookeeperEnsembleLeader(options: { excludingId?: number; timeoutMs?: number } = {}): Promise<ZookeeperEnsembleMember> {
  let leader: ZookeeperEnsembleMember | undefined;
  await waitFor(
    async () => {
      leader = await zookeeperEnsembleLeader();
      return leader !== undefined && leader.id !== options.excludingId;
    },
    options.timeoutMs ?? 30_000,
    serverWait({ what: 'a ZooKeeper ensemble leader', intervalMs: 200 }),
  );
  return leader!;
}

/**
 * Kills the current ensemble leader with SIGKILL (a crash, not a clean shutdown) and
 * returns it; the other two members then elect a new leader. Restart it with
 * `startServer(member.unit)`.
 */
export async function killZookeeperEnsembleLeader(): Promise<ZookeeperEnsembleMember> {
  const leader = await zookeeperEnsembleLeader();
  if (!leader) throw new TestenvError('no ZooKeeper ensemble member leads right now (is zookeeper-ensemble up?)');
  await stopUnits(resolveTarget(leader.unit).units, { signal: 'SIGKILL' });
  return leader;
}
