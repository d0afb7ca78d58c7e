import { componentVersion } from '../install/go-components.js';
import { ensureAllBuilt } from '../install/go-build.js';
import { startUnits, type Unit } from '../process/unit.js';
import { defineBackend, defineServer, type Compaction } from './server.js';
import { ETCD, etcdUnit } from './etcd/unit.js';
import { KUBELET, KUBERNETES, KWOK } from './kubernetes/components.js';
import { compactKubernetes } from './kubernetes/compaction.js';
import { CLIENTS, caCert, certOf, ensurePki, keyOf } from './kubernetes/pki.js';
import { writeKubeconfig, kubeconfigPath } from './kubernetes/kubeconfig.js';
import { FAKE_NODES, KUBERNETES_PORTS, TEST_NAMESPACES, apiServerUrl, auditLogPath, port } from './kubernetes/layout.js';
import { apiserverUnit } from './kubernetes/apiserver.js';
import { controllerManagerUnit } from './kubernetes/controller-manager.js';
import { schedulerUnit } from './kubernetes/scheduler.js';
import { kwokUnit } from './kubernetes/kwok.js';
import { createFakeNodes, createTestNamespaces, waitForDefaultServiceAccounts } from './kubernetes/bootstrap.js';
import { forgetRealNode, realNodeEnabled, rememberRealNode } from './kubernetes/node/layout.js';
import { hostForwarderUnit, inNodeNetwork, netnsUnit } from './kubernetes/node/network.js';
import { cleanUpNode, describeNode, installNode, nodeUnits, upNode, type RealNodeEnv } from './kubernetes/node/real-node.js';

export type { RealNodeEnv } from './kubernetes/node/real-node.js';

export interface KubernetesEnv {
  /** https://127.0.0.1:<port> */
  server: string;
  /** CA that signed the API server's certificate (and every client certificate). */
  caFile: string;
  /** Kubeconfig of a cluster admin (group system:masters). */
  kubeconfig: string;
  /** The admin's client certificate and key, for clients that take files. */
  adminCertFile: string;
  adminKeyFile: string;
  /** JSON-lines audit log of the API server (one audit.k8s.io/v1 Event per line). */
  auditLogPath: string;
  /** Namespaces that exist for tests; tests may create more. */
  namespaces: string[];
  /** The first of `namespaces`. */
  namespace: string;
  /** kwok-managed fake nodes that are Ready: pods scheduled there reach Running. */
  nodes: string[];
  version: string;
  kwokVersion: string;
  /** Present when the instance runs a real node (ROLLCALL_TESTENV_REAL_NODE=1): a kubelet with containerd. */
  realNode?: RealNodeEnv;
}


const kubernetesEtcd = () => etcdUnit({ name: 'kubernetes-etcd', clientPort: port('kubernetesEtcdClient'), peerPort: port('kubernetesEtcdPeer') });

/**
 * The control plane's units. With a real node they run in the instance's network
 * namespace, reached from the machine through the forwarder on the same ports.
 */
function controlPlane(): { etcd: Unit; apiserver: Unit; rest: Unit[] } {
  const wrap = realNodeEnabled() ? inNodeNetwork : (unit: Unit) => unit;
  return { etcd: wrap(kubernetesEtcd()), apiserver: wrap(apiserverUnit()), rest: [controllerManagerUnit(), schedulerUnit(), kwokUnit()].map(wrap) };
}

/** Ports the forwarder carries between the machine and the namespace: every control-plane port, and the kubelet's health port. */
const forwardedPorts = () => [port('kubernetesEtcdClient'), port('kubeApiserver'), port('kubeControllerManager'), port('kubeScheduler'), port('kwok'), port('kubeletHealthz')];
const networkUnits = () => [netnsUnit(forwardedPorts, () => port('kubeApiserver')), hostForwarderUnit(forwardedPorts)];

/**
 * A Kubernetes control plane built from k8s.io/kubernetes: its own etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler, and kwok for fake nodes and pod lifecycle.
 * With ROLLCALL_TESTENV_REAL_NODE=1, also a real node (containerd, runc, CNI, kubelet),
 * everything inside a network namespace of the instance's own.
 */
export const kubernetes = defineServer({
  name: 'kubernetes',
  envKey: 'kubernetes',
  units: () => {
    const { etcd, apiserver, rest } = controlPlane();
    return realNodeEnabled() ? [...networkUnits(), etcd, apiserver, ...rest, ...nodeUnits()] : [etcd, apiserver, ...rest];
  },
  async install(): Promise<void> {
    // the kubelet with the control plane: one `go build` of the module (see buildGroups)
    await ensureAllBuilt(realNodeEnabled() ? [ETCD, KWOK, KUBERNETES, KUBELET] : [ETCD, KWOK, KUBERNETES]);
    if (realNodeEnabled()) await installNode();
  },
  async up(): Promise<void> {
    const realNode = realNodeEnabled();
    if (realNode) rememberRealNode();
    await ensurePki();
    for (const identity of Object.values(CLIENTS)) writeKubeconfig(identity, apiServerUrl());
    const { etcd, apiserver, rest } = controlPlane();
    if (realNode) {
      const [netns, forwarder] = networkUnits();
      await startUnits([netns!]);
      await startUnits([forwarder!]);
    }
    await startUnits([etcd]);
    await startUnits([apiserver]);
    await createTestNamespaces();
    await startUnits(rest);
    await waitForDefaultServiceAccounts();
    await createFakeNodes();
    if (realNode) await upNode();
  },
  async afterDown(): Promise<void> {
    if (!realNodeEnabled()) return;
    await cleanUpNode();
    forgetRealNode();
  },
  async describe(): Promise<KubernetesEnv> {
    return {
      server: apiServerUrl(),
      caFile: caCert(),
      kubeconfig: kubeconfigPath(CLIENTS.admin),
      adminCertFile: certOf(CLIENTS.admin),
      adminKeyFile: keyOf(CLIENTS.admin),
      auditLogPath: auditLogPath(),
      namespaces: TEST_NAMESPACES,
      namespace: TEST_NAMESPACES[0]!,
      nodes: FAKE_NODES,
      version: componentVersion(KUBERNETES),
      kwokVersion: componentVersion(KWOK),
      ...(realNodeEnabled() ? { realNode: describeNode() } : {}),
    };
  },
  /** See {@link compactKubernetes}. */
  compact: (): Promise<Compaction> => compactKubernetes(controlPlane().etcd),
});

/** The Kubernetes backend: a control plane with kwok's fake nodes, and a real node when asked. */
export const kubernetesBackend = defineBackend({
  name: 'kubernetes',
  servers: [kubernetes],
  portOffsets: Object.values(KUBERNETES_PORTS),
  // node: the forwarder that carries the network namespace's ports (node/forwarder.mjs)
  executables: ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok', 'containerd', 'containerd-shim-runc-v2', 'kubelet', 'node'],
  goComponents: [ETCD, KWOK, KUBERNETES, KUBELET],
});
