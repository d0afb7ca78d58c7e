import { ETCD, KUBELET, KUBERNETES, KWOK, componentVersion } from '../go-components.js';
import { ensureBuilt } from '../go-build.js';
import { port } from '../ports.js';
import { startUnits, type Unit } from '../unit.js';
import type { KubernetesEnv } from '../env-file.js';
import type { Server } from './server.js';
import { etcdUnit } from './etcd-unit.js';
import { CLIENTS, caCert, certOf, ensurePki, keyOf } from './kubernetes/pki.js';
import { writeKubeconfig, kubeconfigPath } from './kubernetes/kubeconfig.js';
import { FAKE_NODES, TEST_NAMESPACES, apiServerUrl, auditLogPath } from './kubernetes/layout.js';
import { apiserverUnit } from './kubernetes/apiserver.js';
import { controllerManagerUnit } from './kubernetes/controller-manager.js';
import { schedulerUnit } from './kubernetes/scheduler.js';
import { kwokUnit } from './kubernetes/kwok.js';
import { createFakeNodes, createTestNamespaces, waitForDefaultServiceAccounts } from './kubernetes/bootstrap.js';
import { forgetRealNode, realNodeEnabled, rememberRealNode } from './kubernetes/node/layout.js';
import { hostForwarderUnit, inNodeNetwork, netnsUnit } from './kubernetes/node/network.js';
import { cleanUpNode, describeNode, installNode, nodeUnits, upNode } from './kubernetes/node/real-node.js';

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
export const kubernetes: Server = {
  name: 'kubernetes',
  envKey: 'kubernetes',
  units: () => {
    const { etcd, apiserver, rest } = controlPlane();
    return realNodeEnabled() ? [...networkUnits(), etcd, apiserver, ...rest, ...nodeUnits()] : [etcd, apiserver, ...rest];
  },
  async install() {
    // sequential: each build already uses every core
    await ensureBuilt(ETCD);
    await ensureBuilt(KWOK);
    await ensureBuilt(KUBERNETES);
    if (realNodeEnabled()) {
      await ensureBuilt(KUBELET);
      await installNode();
    }
  },
  async up() {
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
  async afterDown() {
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
};
