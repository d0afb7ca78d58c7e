import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { port } from '../layout.js';
import { KUBELET } from '../components.js';
import { binaryPath } from '../../../install/go-build.js';
import { daemonPid } from '../../../process/daemon.js';
import { httpOk } from '../../../process/http-probe.js';
import { TestenvError } from '../../../env/errors.js';
import type { Unit } from '../../../process/unit.js';
import { CLIENTS, KUBELET_SERVING, caCert, certOf, keyOf } from '../pki.js';
import { kubeconfigPath } from '../kubeconfig.js';
import { CONTAINERD_UNIT, containerdSocket } from './containerd.js';
import { NODE_IP, REAL_NODE_LABEL, REAL_NODE_NAME, REAL_NODE_TAINT, cgroupRoot, nodeDir } from './layout.js';

export const KUBELET_UNIT = 'kubelet';

const kubeletDir = () => join(nodeDir(), 'kubelet');
const configFile = () => join(nodeDir(), 'kubelet-config.json');
const resolvConf = () => join(nodeDir(), 'resolv.conf');
/** Where the kubelet keeps containers' logs (pods/log reads them). */
export const podLogsDir = () => join(nodeDir(), 'pod-logs');

/** The size at which the kubelet rotates a container's log (checked every 3 s, the least it allows). */
export const CONTAINER_LOG_MAX_SIZE = '128Ki';

/** KubeletConfiguration (JSON is YAML): what a kubelet needs on this machine, and no more. */
function kubeletConfig(): object {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // its API on the node's address, inside the namespace: the API server reaches it for logs
    address: NODE_IP,
    port: port('kubelet'),
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: port('kubeletHealthz'),
    tlsCertFile: certOf(KUBELET_SERVING),
    tlsPrivateKeyFile: keyOf(KUBELET_SERVING),
    // callers authenticate (client certificates of our CA, or tokens) and are authorized by the API server
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: caCert() } },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${containerdSocket()}`,
    // this machine runs cgroup v1, which 1.36 refuses unless told; cgroupfs, no systemd here
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: cgroupRoot(),
    cgroupsPerQOS: true,
    failSwapOn: false,
    // nothing can be pulled back: never collect an image
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    podLogsDir: podLogsDir(),
    // no cluster DNS exists; an empty resolv.conf makes a lookup fail at once instead of leaving
    resolvConf: resolvConf(),
    clusterDomain: 'cluster.local',
    registerWithTaints: [REAL_NODE_TAINT],
    serializeImagePulls: false,
    // status soon after a change (a test waits for Ready transitions)
    nodeStatusUpdateFrequency: '10s',
    syncFrequency: '10s',
    // small and often, so a test sees its task's log rotated while it follows it (the
    // kubelet's defaults are 10Mi checked every 10s); no test reads more than the current file
    containerLogMaxSize: CONTAINER_LOG_MAX_SIZE,
    containerLogMaxFiles: 3,
    containerLogMonitorInterval: '3s',
    protectKernelDefaults: false,
  };
}

/**
 * The kubelet refuses a cgroup root that is missing in any v1 hierarchy; a new cpuset
 * group has no CPUs or memory nodes until given its parent's.
 */
function createCgroupRoot(): void {
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    if (hierarchy === 'unified') continue;
    const dir = join('/sys/fs/cgroup', hierarchy, cgroupRoot());
    if (existsSync(dir)) continue;
    mkdirSync(dir);
    if (hierarchy === 'cpuset') {
      for (const file of ['cpuset.cpus', 'cpuset.mems']) writeFileSync(join(dir, file), readFileSync(join('/sys/fs/cgroup', hierarchy, file)));
    }
  }
}

/**
 * The real node's kubelet, built from the pinned Kubernetes module, in containerd's
 * network and mount namespaces (so it shares its volumes and its shadowed sysctls).
 */
export function kubeletUnit(): Unit {
  return {
    name: KUBELET_UNIT,
    ports: [],
    startTimeoutMs: 90_000,
    stopGraceMs: 10_000,
    async prepare() {
      mkdirSync(kubeletDir(), { recursive: true });
      mkdirSync(podLogsDir(), { recursive: true });
      writeFileSync(resolvConf(), '# no nameserver: the test network has no DNS\n');
      writeFileSync(configFile(), JSON.stringify(kubeletConfig(), null, 2) + '\n');
      createCgroupRoot();
    },
    command() {
      const containerd = daemonPid(CONTAINERD_UNIT);
      if (containerd === undefined) throw new TestenvError(`${KUBELET_UNIT}: ${CONTAINERD_UNIT} is not running`);
      return {
        command: 'nsenter',
        args: [
          `--target=${containerd}`, '--net', '--mount', '--',
          binaryPath(KUBELET, 'kubelet'),
          `--config=${configFile()}`,
          `--kubeconfig=${kubeconfigPath(CLIENTS.kubelet)}`,
          `--root-dir=${kubeletDir()}`,
          `--cert-dir=${join(kubeletDir(), 'pki')}`,
          `--hostname-override=${REAL_NODE_NAME}`,
          `--node-ip=${NODE_IP}`,
          `--node-labels=${REAL_NODE_LABEL.key}=${REAL_NODE_LABEL.value}`,
          '--v=2',
        ],
      };
    },
    async isHealthy() {
      return httpOk(`http://127.0.0.1:${port('kubeletHealthz')}/healthz`);
    },
  };
}
