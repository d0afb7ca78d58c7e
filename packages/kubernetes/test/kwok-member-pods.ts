import { DiscoveryV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { waitFor, type ConformancePod, type PodCapability } from '@rollcall/conformance';
import { KWOK_POD_ANNOTATIONS } from '@rollcall/tools/testenv';
import type { Admin } from './admin.js';

/** The one headless Service of the pod-mode conformance run: every role's `memberService`, selecting every pod of the run. */
export const MEMBER_SERVICE = 'rollcall-conformance';
const POD_LABEL = { 'rollcall.dev/conformance-member': 'true' };

/** The `kubernetes` section that runs a registry in `pod`: its records in the pod's namespace, the pod its own, the run's Service for every role. */
export interface PodSection {
  namespace: string;
  podUid: string;
  podName: string;
  memberService: string;
}

/**
 * Kwok pods for the conformance suite's `pod` liveness run, in a namespace of
 * their own behind one headless Service. kwok plays their kubelet: Running and
 * Ready once scheduled, not Ready and Ready again by the
 * {@link KWOK_POD_ANNOTATIONS.ready} annotation (its readiness Stages).
 */
export function kwokMemberPods(admin: Admin): PodCapability & { section(pod: ConformancePod): PodSection; prepare(): Promise<void> } {
  const discovery = admin.kc.makeApiClient(DiscoveryV1Api);
  let setUp: Promise<string> | undefined;
  const names = new Map<string, { name: string; namespace: string }>();
  // A failed set-up is tried again by the next pod, not handed to every later case.
  const namespace = () =>
    (setUp ??= (async () => {
      const ns = await admin.namespace('podconf', { forPods: true });
      await admin.core.createNamespacedService({ namespace: ns, body: { metadata: { name: MEMBER_SERVICE }, spec: { clusterIP: 'None', selector: POD_LABEL, ports: [{ name: 'probe', port: 8080 }] } } });
      return ns;
    })().catch((err: unknown) => {
      setUp = undefined;
      throw err;
    }));

  /** Resolves once the Service's EndpointSlices show the pod `uid` serving. */
  const serving = async (ns: string, uid: string) =>
    waitFor(
      async () => {
        const slices = await discovery.listNamespacedEndpointSlice({ namespace: ns, labelSelector: `kubernetes.io/service-name=${MEMBER_SERVICE}` });
        return slices.items.flatMap((s) => s.endpoints ?? []).some((e) => e.targetRef?.uid === uid && (e.conditions?.serving ?? e.conditions?.ready) === true);
      },
      60_000,
      { what: `pod ${uid} serving in the endpointslices of Service ${MEMBER_SERVICE}`, intervalMs: 100 },
    );

  return {
    /**
     * Makes the run's namespace and Service now. Before any case restarts the API
     * server: the controller manager then took over 60 s to give a new namespace its
     * default service account (which pods need), longer than a case's timeout.
     */
    prepare: async () => void (await namespace()),
    // The endpoints controller and kwok each take a turn between the pod's condition and the reader's watch.
    readinessDelayMs: 1500,
    async start(identity) {
      const ns = await namespace();
      const body: V1Pod = {
        metadata: { generateName: `${identity.toLowerCase().replace(/[^a-z0-9-]/g, '-')}-`, labels: POD_LABEL },
        spec: { containers: [{ name: 'main', image: 'registry.invalid/member:1' }], terminationGracePeriodSeconds: 0 },
      };
      const created = await admin.core.createNamespacedPod({ namespace: ns, body });
      const name = created.metadata!.name!;
      const uid = created.metadata!.uid!;
      names.set(uid, { name, namespace: ns });
      const setReady = async (ready: boolean) => {
        await admin.core.patchNamespacedPod({ name, namespace: ns, body: { metadata: { annotations: { [KWOK_POD_ANNOTATIONS.ready]: String(ready) } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
        // What the API server says of the pod; the endpointslices follow on their own time, which readers must bear.
        await waitFor(async () => (await admin.core.readNamespacedPod({ name, namespace: ns })).status?.conditions?.find((c) => c.type === 'Ready')?.status === (ready ? 'True' : 'False'), 30_000, {
          what: `pod ${name} Ready=${ready}`,
          intervalMs: 50,
        });
      };
      // Ready and listed before the registry starts: a member announced in it is live at once.
      await serving(ns, uid);
      return {
        uid,
        notReady: () => setReady(false),
        ready: () => setReady(true),
        async delete() {
          await admin.core.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 0 }).catch((err: { code?: number }) => {
            if (err.code !== 404) throw err;
          });
        },
      };
    },
    section(pod) {
      const where = names.get(pod.uid);
      if (!where) throw new Error(`pod ${pod.uid} is not one of this run's`);
      return { namespace: where.namespace, podUid: pod.uid, podName: where.name, memberService: MEMBER_SERVICE };
    },
  };
}
