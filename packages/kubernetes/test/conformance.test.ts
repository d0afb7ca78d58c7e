import { createRegistry, type Registry } from '@rollcall/core';
import type { RecordStore } from '@rollcall/core/spi';
import { registryConformance, storeConformance, type ConformancePod } from '@rollcall/conformance';
import { compactServer, proxiedKubeconfig, restartApiServerAndControllers, type TcpProxy } from '@rollcall/tools/testenv';
import { afterAll, beforeAll } from 'vitest';
import { LIVENESS_ANNOTATION } from '../src/codec.js';
import { createKubernetesStore, objectName, PAYLOAD_ANNOTATION, registryPlugin } from '../src/index.js';
import { Admin } from './admin.js';
import { kubeEnv } from './kube-env.js';
import { kwokMemberPods } from './kwok-member-pods.js';

const env = kubeEnv();
const proxies = new WeakMap<Registry, TcpProxy>();
const opened: TcpProxy[] = [];
afterAll(async () => Promise.all(opened.map((p) => p.close())));

const storeProxies = new WeakMap<RecordStore, TcpProxy>();
/** Compacts the API server's etcd and lets its watch caches relist past it. */
const compact = async () => void (await compactServer('kubernetes'));

/**
 * A record's Lease edited past the store: a JSON object's record fields onto the spec (the API server's schema may
 * refuse them: false), its payload and liveness onto their annotations; any other text as the payload annotation.
 */
async function overwriteRaw(cluster: string, key: string, text: string): Promise<boolean> {
  const admin = new Admin();
  const name = objectName(cluster, key);
  const lease = await admin.coordination.readNamespacedLease({ name, namespace: env.namespace });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const annotations = { ...lease.metadata!.annotations };
  const spec = { ...lease.spec } as Record<string, unknown>;
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const fields = value as Record<string, unknown>;
    for (const field of ['holderIdentity', 'leaseDurationSeconds', 'acquireTime', 'renewTime', 'leaseTransitions']) spec[field] = fields[field];
    if ('payload' in fields) annotations[PAYLOAD_ANNOTATION] = JSON.stringify(fields.payload);
    if ('liveness' in fields) annotations[LIVENESS_ANNOTATION] = JSON.stringify(fields.liveness);
  } else {
    annotations[PAYLOAD_ANNOTATION] = text;
  }
  return admin.coordination.replaceNamespacedLease({ name, namespace: env.namespace, body: { ...lease, metadata: { ...lease.metadata, annotations }, spec } as never }).then(
    () => true,
    () => false,
  );
}

storeConformance({
  name: 'kubernetes',
  openStore: async (cluster) => {
    const { proxy, kubeconfig } = await proxiedKubeconfig();
    opened.push(proxy);
    const store = await createKubernetesStore({ cluster, kubeconfig, namespace: env.namespace, requestTimeoutMs: 2000 });
    storeProxies.set(store, proxy);
    return store;
  },
  capabilities: { compact, partition: (s) => storeProxies.get(s)!.cut('reset'), heal: (s) => storeProxies.get(s)!.heal(), overwriteRaw },
});

const pods = kwokMemberPods(new Admin());
beforeAll(() => pods.prepare(), 120_000);

// Once with heartbeats on the member Leases, once with one elected reaper per role reading heartbeat Leases
// (registry.member.liveness=reaper), once with each registry in a kwok pod of its own whose readiness is its
// members' liveness (registry.member.liveness=pod): the contract holds every way.
for (const [NAME, liveness] of [
  ['kubernetes', undefined],
  ['kubernetes (reaper liveness)', 'reaper'],
  ['kubernetes (pod liveness)', 'pod'],
] as const) {
  /** The backend section: in the pod mode the registry's pod is its own, and its records live beside the pod. */
  const section = (kubeconfig: string, pod: ConformancePod | undefined) => ({ kubeconfig, namespace: env.namespace, ...(pod ? pods.section(pod) : {}) });
  registryConformance({
    name: NAME,
    liveness,
    createRegistry: async (config, pod) => {
      const { proxy, kubeconfig } = await proxiedKubeconfig();
      opened.push(proxy);
      const registry = await createRegistry({ ...config, type: 'kubernetes', kubernetes: section(kubeconfig, pod) }, { plugins: [registryPlugin as never] });
      proxies.set(registry, proxy);
      return registry;
    },
    capabilities: {
      crashChild: { kind: 'config', config: (config, pod) => ({ ...config, type: 'kubernetes', kubernetes: section(env.kubeconfig, pod) }) },
      partition: { partition: (r) => proxies.get(r)!.cut('reset'), heal: (r) => proxies.get(r)!.heal() },
      // The controllers too: the pod run's pods need scheduling and EndpointSlices within a case of any later run.
      restartServer: () => restartApiServerAndControllers(),
      compact,
      pods,
    },
  });
}
