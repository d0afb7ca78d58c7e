import { join } from 'node:path';
import { port } from './layout.js';
import { KWOK } from './components.js';
import { binaryPath, componentDir } from '../../install/go-build.js';
import { httpsRequest } from '../../process/http-probe.js';
import type { Unit } from '../../process/unit.js';
import { CLIENTS, KWOK_SERVING, certOf, keyOf } from './pki.js';
import { kubeconfigPath } from './kubeconfig.js';
import { KWOK_NODE_ANNOTATION } from './layout.js';
import { kwokStagesPath, writeKwokStages } from './kwok-stages.js';

/**
 * kwok: plays the kubelet for fake nodes (those with the kwok annotation), so nodes are
 * Ready and scheduled pods go Running, with the default stages kwokctl uses, and ours
 * (kwok-stages.ts) for pods that ask by annotation to exit or to wait.
 */
export function kwokUnit(): Unit {
  const p = port('kwok');
  return {
    name: 'kwok',
    ports: [p],
    startTimeoutMs: 30_000,
    async prepare() {
      writeKwokStages();
    },
    command() {
      return {
        command: binaryPath(KWOK, 'kwok'),
        args: [
          `--kubeconfig=${kubeconfigPath(CLIENTS.kwok)}`,
          `--config=${join(componentDir(KWOK), 'stages.yaml')}`,
          `--config=${kwokStagesPath()}`,
          `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION.key}=${KWOK_NODE_ANNOTATION.value}`,
          `--server-address=127.0.0.1:${p}`,
          // the node address stays on loopback: when the API server proxies logs or
          // exec to a fake node's kubelet it reaches kwok itself, never another host
          '--node-ip=127.0.0.1',
          `--node-port=${p}`,
          // Pod addresses are never dialled, but the endpoints controller must be able to
          // publish them: an EndpointSlice refuses loopback addresses. A private range
          // apart from the real node's pods (10.201.0.0/24) and the Services (10.96.0.0/16).
          '--cidr=10.202.0.0/16',
          `--tls-cert-file=${certOf(KWOK_SERVING)}`,
          `--tls-private-key-file=${keyOf(KWOK_SERVING)}`,
        ],
      };
    },
    async isHealthy() {
      return (await httpsRequest(`https://127.0.0.1:${p}/healthz`, { insecure: true })).status === 200;
    },
  };
}
