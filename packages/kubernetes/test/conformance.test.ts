import { createRegistry, type Registry } from '@rollcall/core';
import type { RecordStore } from '@rollcall/core/spi';
import { registryConformance, storeConformance } from '@rollcall/conformance';
import { compactServer, proxiedKubeconfig, restartServer, type TcpProxy } from '@rollcall/tools/testenv';
import { afterAll } from 'vitest';
import { createKubernetesStore, registryPlugin } from '../src/index.js';
import { kubeEnv } from './kube-env.js';

const env = kubeEnv();
const proxies = new WeakMap<Registry, TcpProxy>();
const opened: TcpProxy[] = [];
afterAll(async () => Promise.all(opened.map((p) => p.close())));

const storeProxies = new WeakMap<RecordStore, TcpProxy>();
/** Compacts the API server's etcd and lets its watch caches relist past it. */
const compact = async () => void (await compactServer('kubernetes'));

storeConformance({
  name: 'kubernetes',
  openStore: async (cluster) => {
    const { proxy, kubeconfig } = await proxiedKubeconfig();
    opened.push(proxy);
    const store = await createKubernetesStore({ cluster, kubeconfig, namespace: env.namespace, requestTimeoutMs: 2000 });
    storeProxies.set(store, proxy);
    return store;
  },
  capabilities: { compact, partition: (s) => storeProxies.get(s)!.cut('reset'), heal: (s) => storeProxies.get(s)!.heal() },
});

// Once with heartbeats on the member Leases, once with one elected reaper per role reading heartbeat Leases
// (registry.member.liveness=reaper): the contract holds either way.
for (const [NAME, liveness] of [
  ['kubernetes', undefined],
  ['kubernetes (reaper liveness)', 'reaper'],
] as const) {
  registryConformance({
    name: NAME,
    liveness,
    createRegistry: async (config) => {
      const { proxy, kubeconfig } = await proxiedKubeconfig();
      opened.push(proxy);
      const registry = await createRegistry({ ...config, type: 'kubernetes', kubernetes: { kubeconfig, namespace: env.namespace } }, { plugins: [registryPlugin as never] });
      proxies.set(registry, proxy);
      return registry;
    },
    capabilities: {
      crashChild: { kind: 'config', config: (config) => ({ ...config, type: 'kubernetes', kubernetes: { kubeconfig: env.kubeconfig, namespace: env.namespace } }) },
      partition: { partition: (r) => proxies.get(r)!.cut('reset'), heal: (r) => proxies.get(r)!.heal() },
      restartServer: () => restartServer('kube-apiserver'),
      compact,
    },
  });
}
