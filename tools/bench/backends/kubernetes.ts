import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';
import { requireTestEnv, serviceAccountKubeconfig } from '../../testenv/index.js';
import { toolsPackageDir } from '../../testenv/env/paths.js';
import { AuditLog } from '../../testenv/kube/audit-log.js';
import { perClientIdleProbe } from '../scenarios/idle-requests.js';
import { type BackendConfig, type BenchBackend, type BenchTarget, crashChildWithConfig } from '../target.js';

/** The test API server, in a namespace of the run's own, with the shipped RBAC. */
export interface KubernetesTarget extends BenchTarget {
  namespace: string;
  /** The admin's kubeconfig (system:masters). */
  adminKubeconfig: string;
  audit: AuditLog;
  /** A service account bound to the shipped `rollcall-coordinator` Role: its kubeconfig, and its user name in the audit log. */
  serviceAccount(name: string): Promise<{ kubeconfig: string; user: string }>;
}

/** The Role that campaigns, locks and announces, as deploy/kubernetes ships it. */
const COORDINATOR_MANIFEST = 'rollcall-coordinator.yaml';
/** The service account of {@link BenchTarget.processConfig}. */
export const PROCESS_ACCOUNT = 'rollcall-process';

export const kubernetesBackend: BenchBackend<KubernetesTarget> = {
  name: 'kubernetes',
  servers: ['kubernetes'],
  async prepare() {
    const kube = requireTestEnv('kubernetes');
    const kc = new KubeConfig();
    kc.loadFromFile(kube.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    const objects = KubernetesObjectApi.makeApiClient(kc);
    const namespace = `rollcall-bench-${randomBytes(3).toString('hex')}`;
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    const manifest = readFileSync(join(toolsPackageDir(), '..', 'deploy', 'kubernetes', COORDINATOR_MANIFEST), 'utf8');
    for (const doc of loadAllYaml(manifest) as (KubernetesObject & { subjects?: { namespace?: string }[] })[]) {
      doc.metadata = { ...doc.metadata, namespace };
      for (const subject of doc.subjects ?? []) subject.namespace = namespace;
      await objects.create(doc);
    }
    const coordination = kc.makeApiClient(CoordinationV1Api);
    const audit = new AuditLog(kube.auditLogPath, async (name) => {
      await coordination.readNamespacedLease({ name, namespace }).catch(() => undefined); // a 404, logged all the same
    });
    const backendConfig = (): BackendConfig => ({ type: 'kubernetes', kubernetes: { kubeconfig: kube.kubeconfig, namespace } });
    const serviceAccount = async (name: string) => {
      const kubeconfig = await serviceAccountKubeconfig(namespace, name);
      await objects.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name, namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'rollcall-coordinator' },
        subjects: [{ kind: 'ServiceAccount', name, namespace }],
      } as KubernetesObject);
      return { kubeconfig, user: `system:serviceaccount:${namespace}:${name}` };
    };
    let processAccount: Promise<unknown> | undefined;
    return {
      namespace,
      adminKubeconfig: kube.kubeconfig,
      audit,
      serviceAccount,
      backendConfig,
      async processConfig() {
        processAccount ??= serviceAccount(PROCESS_ACCOUNT);
        await processAccount;
        // a token minted now outlives any one size of a run
        return { type: 'kubernetes', kubernetes: { kubeconfig: await serviceAccountKubeconfig(namespace, PROCESS_ACCOUNT), namespace } };
      },
      crashChild: crashChildWithConfig(backendConfig),
      idle: perClientIdleProbe({
        source: "the API server's audit log, one service account per role",
        async client(role) {
          const { kubeconfig, user } = await serviceAccount(`bench-${role}`);
          return { backendConfig: { type: 'kubernetes', kubernetes: { kubeconfig, namespace } }, name: user };
        },
        start() {
          const window = audit.open();
          return { stop: (clients) => audit.close(window, clients) };
        },
      }),
      async close() {
        await core.deleteNamespace({ name: namespace });
      },
    };
  },
};
