/**
 * The kwok pods of `registry.member.liveness=pod` in the scale benchmark: one
 * per simulated member, behind a headless Service per role (`rollcall-{role}`,
 * the default `registry.kubernetes.memberService`), made and Ready before the
 * members announce. A crash turns its pods not Ready through our kwok readiness
 * Stage (`KWOK_POD_ANNOTATIONS.ready`), as a kubelet does when a container
 * exits, then deletes them.
 */
import { DiscoveryV1Api, PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { waitFor } from '@rollcall/conformance';
import { KubeAdmin } from '../../testenv/kube/kube-admin.js';
import { KWOK_POD_ANNOTATIONS } from '../../testenv/index.js';
import { serverWait } from '../../testenv/process/server-wait.js';
import { PROCESS_ACCOUNT, type KubernetesTarget } from '../backends/kubernetes.js';
import { MASTER_ROLE, WORKER_ROLE, type SimProcess } from './protocol.js';

/** The label a role's Service selects its pods by. */
const ROLE_LABEL = 'rollcall.bench/role';
/** The label of every pod of one size, by its cluster name: deleted together. */
const CLUSTER_LABEL = 'rollcall.bench/cluster';
/** Pods created at once. */
const CREATE_CONCURRENCY = 16;
/** Bound on N pods being scheduled, Ready (kwok) and published Ready in their Services' EndpointSlices: two minutes, and 100 ms more per pod. */
const readyBoundMs = (pods: number) => 120_000 + 100 * pods;
/** Poll interval of the EndpointSlices while pods come up or go. */
const POLL_MS = 1000;

/** Runs `step` over `items`, `concurrency` at a time. */
async function inLanes<T>(items: readonly T[], concurrency: number, step: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await step(item);
  }));
}

/** A pod's name: the size's cluster name and the simulated process, so sizes never collide while the last one's pods go. */
const podName = (cluster: string, id: string) => `${cluster}-${id}`;

export class ScalePods {
  private readonly admin = new KubeAdmin();
  private readonly discovery = this.admin.kc.makeApiClient(DiscoveryV1Api);
  private prepared: Promise<void> | undefined;

  constructor(private readonly target: KubernetesTarget) {}

  /** Once per run: the shipped pod-liveness Role for the simulated processes' account, and a headless Service per role. */
  private prepare(): Promise<void> {
    return (this.prepared ??= (async () => {
      const { namespace } = this.target;
      // the API server refuses a pod before the controller manager made the namespace's default service account
      await waitFor(() => this.admin.core.readNamespacedServiceAccount({ name: 'default', namespace }).then(() => true, () => false), 60_000, serverWait({ what: `the default service account of namespace ${namespace}` }));
      await this.admin.applyManifest('rollcall-pod-liveness.yaml', namespace);
      await this.admin.objects.create({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'rollcall-pod-liveness-bench', namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'rollcall-pod-liveness' },
        subjects: [{ kind: 'ServiceAccount', name: PROCESS_ACCOUNT, namespace }],
      } as KubernetesObject);
      for (const role of [MASTER_ROLE, WORKER_ROLE]) {
        await this.admin.core.createNamespacedService({ namespace, body: { metadata: { name: `rollcall-${role}` }, spec: { clusterIP: 'None', selector: { [ROLE_LABEL]: role }, ports: [{ name: 'probe', port: 8080 }] } } });
      }
    })());
  }

  /** A kwok pod for each of `sims`, its uid set as the process's `podUid`; resolves once every one is Ready in its role's Service. */
  async create(cluster: string, sims: readonly SimProcess[]): Promise<void> {
    await this.prepare();
    const { namespace } = this.target;
    await inLanes(sims, CREATE_CONCURRENCY, async (sim) => {
      const pod = await this.admin.core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: podName(cluster, sim.id), labels: { [ROLE_LABEL]: sim.role, [CLUSTER_LABEL]: cluster } },
          spec: { nodeSelector: { type: 'kwok' }, containers: [{ name: 'member', image: 'registry.invalid/rollcall-bench:1' }] },
        },
      });
      sim.podUid = pod.metadata!.uid!;
    });
    const uids = new Set(sims.map((s) => s.podUid!));
    let ready = 0;
    await waitFor(
      async () => (ready = [...(await this.readyUids())].filter((uid) => uids.has(uid)).length) === uids.size,
      readyBoundMs(sims.length),
      { what: `${uids.size} pods Ready in the EndpointSlices of rollcall-${MASTER_ROLE} and rollcall-${WORKER_ROLE}`, intervalMs: POLL_MS, explain: () => `${ready} were` },
    );
  }

  /** The pods of `ids` turn not Ready (their container gone, as the kubelet reports it). */
  async notReady(cluster: string, ids: readonly string[]): Promise<void> {
    const { namespace } = this.target;
    await Promise.all(
      ids.map((id) =>
        this.admin.core.patchNamespacedPod({ name: podName(cluster, id), namespace, body: { metadata: { annotations: { [KWOK_POD_ANNOTATIONS.ready]: 'false' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)),
      ),
    );
  }

  /** Deletes the pods of `ids` at once (no grace period: kwok runs nothing to stop). */
  async delete(cluster: string, ids: readonly string[]): Promise<void> {
    const { namespace } = this.target;
    await Promise.all(ids.map((id) => this.admin.core.deleteNamespacedPod({ name: podName(cluster, id), namespace, gracePeriodSeconds: 0 })));
  }

  /** Deletes every pod of the size `cluster` (`count` of them) and waits until they are gone, so the next size starts from none. */
  async clear(cluster: string, count: number): Promise<void> {
    const { namespace } = this.target;
    const labelSelector = `${CLUSTER_LABEL}=${cluster}`;
    // Thousands of pods outlast the request (the server goes on deleting them): the wait below is the bound.
    await this.admin.core.deleteCollectionNamespacedPod({ namespace, labelSelector, gracePeriodSeconds: 0 }).catch(() => undefined);
    let left = 0;
    await waitFor(
      async () => (left = (await this.admin.core.listNamespacedPod({ namespace, labelSelector })).items.length) === 0,
      readyBoundMs(count),
      { what: `the pods of ${cluster} gone`, intervalMs: POLL_MS, explain: () => `${left} left` },
    );
  }

  /** The uids of the pods published `ready` in the namespace's EndpointSlices. */
  private async readyUids(): Promise<Set<string>> {
    const slices = await this.discovery.listNamespacedEndpointSlice({ namespace: this.target.namespace });
    const uids = new Set<string>();
    for (const slice of slices.items) {
      for (const e of slice.endpoints ?? []) {
        if (e.targetRef?.uid && e.conditions?.ready === true) uids.add(e.targetRef.uid);
      }
    }
    return uids;
  }
}
