import { port } from './layout.js';
import { KUBERNETES } from './components.js';
import { binaryPath } from '../../install/go-build.js';
import { httpsRequest } from '../../process/http-probe.js';
import type { Unit } from '../../process/unit.js';
import { CLIENTS } from './pki.js';
import { kubeconfigPath } from './kubeconfig.js';

/** kube-scheduler with its bootstrap identity system:kube-scheduler. */
export function schedulerUnit(): Unit {
  const kubeconfig = kubeconfigPath(CLIENTS.scheduler);
  const p = port('kubeScheduler');
  return {
    name: 'kube-scheduler',
    ports: [p],
    startTimeoutMs: 60_000,
    async prepare() {},
    command() {
      return {
        command: binaryPath(KUBERNETES, 'kube-scheduler'),
        args: [
          `--kubeconfig=${kubeconfig}`,
          `--authentication-kubeconfig=${kubeconfig}`,
          `--authorization-kubeconfig=${kubeconfig}`,
          '--bind-address=127.0.0.1',
          `--secure-port=${p}`,
          '--leader-elect=false',
          '--profiling=false',
        ],
      };
    },
    async isHealthy() {
      return (await httpsRequest(`https://127.0.0.1:${p}/healthz`, { insecure: true })).status === 200;
    },
  };
}
