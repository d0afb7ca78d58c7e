import { port } from './layout.js';
import { KUBERNETES } from './components.js';
import { binaryPath } from '../../install/go-build.js';
import { httpsRequest } from '../../process/http-probe.js';
import type { Unit } from '../../process/unit.js';
import { CLIENTS, caCert, caKey, serviceAccountKey } from './pki.js';
import { kubeconfigPath } from './kubeconfig.js';
import { SERVICE_CIDR } from './layout.js';

/**
 * kube-controller-manager as kubeadm runs it: its own identity plus one service account per
 * controller. It runs the service-account, namespace, garbage-collector and node-lifecycle
 * controllers the tests rely on (a "default" service account in every namespace, owner
 * references that cascade).
 */
export function controllerManagerUnit(): Unit {
  const kubeconfig = kubeconfigPath(CLIENTS.controllerManager);
  const p = port('kubeControllerManager');
  return {
    name: 'kube-controller-manager',
    ports: [p],
    startTimeoutMs: 60_000,
    async prepare() {},
    command() {
      return {
        command: binaryPath(KUBERNETES, 'kube-controller-manager'),
        args: [
          `--kubeconfig=${kubeconfig}`,
          `--authentication-kubeconfig=${kubeconfig}`,
          `--authorization-kubeconfig=${kubeconfig}`,
          '--bind-address=127.0.0.1',
          `--secure-port=${p}`,
          // a single instance: no election delay on restart
          '--leader-elect=false',
          '--use-service-account-credentials=true',
          `--service-account-private-key-file=${serviceAccountKey()}`,
          `--root-ca-file=${caCert()}`,
          `--cluster-signing-cert-file=${caCert()}`,
          `--cluster-signing-key-file=${caKey()}`,
          `--service-cluster-ip-range=${SERVICE_CIDR}`,
          '--controllers=*',
          '--profiling=false',
        ],
      };
    },
    async isHealthy() {
      return (await httpsRequest(`https://127.0.0.1:${p}/healthz`, { insecure: true })).status === 200;
    },
  };
}
