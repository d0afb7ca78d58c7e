import { port } from '../../ports.js';
import { KUBERNETES } from '../../go-components.js';
import { binaryPath } from '../../go-build.js';
import { httpsRequest } from '../../http-probe.js';
import type { Unit } from '../../unit.js';
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
