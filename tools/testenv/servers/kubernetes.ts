import { ETCD, KUBERNETES, KWOK, componentVersion } from '../go-components.js';
import { ensureBuilt } from '../go-build.js';
import { port } from '../ports.js';
import { startUnits } from '../unit.js';
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

const kubernetesEtcd = () => etcdUnit({ name: 'kubernetes-etcd', clientPort: port('kubernetesEtcdClient'), peerPort: port('kubernetesEtcdPeer') });

/**
 * A Kubernetes control plane built from k8s.io/kubernetes: its own etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler, and kwok for fake nodes and pod lifecycle.
 */
export const kubernetes: Server = {
  name: 'kubernetes',
  envKey: 'kubernetes',
  units: () => [kubernetesEtcd(), apiserverUnit(), controllerManagerUnit(), schedulerUnit(), kwokUnit()],
  async install() {
    // sequential: each build already uses every core
    await ensureBuilt(ETCD);
    await ensureBuilt(KWOK);
    await ensureBuilt(KUBERNETES);
  },
  async up() {
    await ensurePki();
    for (const identity of Object.values(CLIENTS)) writeKubeconfig(identity, apiServerUrl());
    await startUnits([kubernetesEtcd()]);
    await startUnits([apiserverUnit()]);
    await createTestNamespaces();
    await startUnits([controllerManagerUnit(), schedulerUnit(), kwokUnit()]);
    await waitForDefaultServiceAccounts();
    await createFakeNodes();
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
    };
  },
};
