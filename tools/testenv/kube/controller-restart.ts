import { restartServer, type StopOptions } from '../faults/faults.js';

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
