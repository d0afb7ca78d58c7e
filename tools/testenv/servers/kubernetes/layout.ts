import { join } from 'node:path';
import { portsOf } from '../../process/ports.js';
import { unitDir } from '../../env/paths.js';

/** Offsets from the instance's port base of every port the control plane and the real node listen on. */
export const KUBERNETES_PORTS = {
  kubernetesEtcdClient: 579,
  kubernetesEtcdPeer: 580,
  kubeApiserver: 443,
  kubeControllerManager: 257,
  kubeScheduler: 259,
  kwok: 247,
  // the real node (ROLLCALL_TESTENV_REAL_NODE=1), inside the instance's network namespace
  kubelet: 250,
  kubeletHealthz: 248,
};

/** This instance's port of one of {@link KUBERNETES_PORTS}. */
export const port = portsOf(KUBERNETES_PORTS);

/** The API server's URL. */
export const apiServerUrl = () => `https://127.0.0.1:${port('kubeApiserver')}`;

/** JSON-lines audit log (one audit.k8s.io/v1 Event per line). */
export const auditLogPath = () => join(unitDir('kubernetes'), 'audit', 'audit.log');

/** Namespaces created for tests by `up`. */
export const TEST_NAMESPACES = ['rollcall-test'];

/** kwok-managed fake nodes created by `up`. */
export const FAKE_NODES = ['kwok-node-0'];

/** Annotation kwok is told to manage nodes by (only our fake nodes). */
export const KWOK_NODE_ANNOTATION = { key: 'kwok.x-k8s.io/node', value: 'fake' };

/** The in-cluster service range; nothing binds these addresses. */
export const SERVICE_CIDR = '10.96.0.0/16';
export const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
