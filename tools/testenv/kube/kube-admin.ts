import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoordinationV1Api, CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml, type KubernetesObject, type V1Lease } from '@kubernetes/client-node';
import { requireTestEnv } from '../env/env-file.js';
import { toolsPackageDir } from '../env/paths.js';
import { waitFor } from '@rollcall/conformance';
import { serverWait } from '../process/server-wait.js';

/** Cluster-admin calls for test setup and for looking behind the code under test (kubectl-equivalent), on the test API server. */
export class KubeAdmin {
  readonly kc = new KubeConfig();
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
  readonly objects: KubernetesObjectApi;

  constructor() {
    this.kc.loadFromFile(requireTestEnv('kubernetes').kubeconfig);
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.coordination = this.kc.makeApiClient(CoordinationV1Api);
    this.objects = KubernetesObjectApi.makeApiClient(this.kc);
  }

  /**
   * Creates a fresh namespace for one test file. With `forPods`, returns once
   * its `default` service account exists: the API server refuses a pod (even
   * a dry run) before the controller manager has made it, which takes it a
   * while under load.
   */
  async namespace(prefix: string, options: { forPods?: boolean } = {}): Promise<string> {
    const name = `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
    await this.core.createNamespace({ body: { metadata: { name } } });
    if (options.forPods) {
      await waitFor(() => this.core.readNamespacedServiceAccount({ name: 'default', namespace: name }).then(() => true, () => false), 60_000, serverWait({ what: `the default service account of namespace ${name}` }));
    }
    return name;
  }

  /** Applies a shipped manifest from deploy/kubernetes into `namespace`, binding its subjects there. */
  async applyManifest(file: string, namespace: string): Promise<void> {
    const text = readFileSync(join(toolsPackageDir(), '..', 'deploy', 'kubernetes', file), 'utf8');
    for (const doc of loadAllYaml(text) as (KubernetesObject & { subjects?: { namespace?: string }[] })[]) {
      doc.metadata = { ...doc.metadata, namespace };
      for (const subject of doc.subjects ?? []) subject.namespace = namespace;
      await this.objects.create(doc);
    }
  }

  async leases(namespace: string, labelSelector?: string): Promise<V1Lease[]> {
    return (await this.coordination.listNamespacedLease({ namespace, labelSelector })).items;
  }
}
