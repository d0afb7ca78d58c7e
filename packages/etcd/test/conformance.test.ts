import { afterAll } from 'vitest';
import { createRegistry, type RecordStore, type Registry } from '@rollcall/core';
import { registryConformance, storeConformance } from '@rollcall/conformance';
import { restartServer, TcpProxy } from '@rollcall/tools/testenv';
import { createEtcdStore } from '../src/index.js';
import { compactNow, etcdEndpoints, rawClient } from './support/etcd.js';

// Each store and registry of the suite reaches etcd through its own proxy, so one can be cut off alone.
const proxies = new WeakMap<object, TcpProxy>();
const opened: TcpProxy[] = [];
const raw = rawClient();

async function viaProxy(): Promise<TcpProxy> {
  const proxy = await TcpProxy.start(etcdEndpoints()[0]!);
  opened.push(proxy);
  return proxy;
}

afterAll(async () => {
  raw.close();
  await Promise.allSettled(opened.map((p) => p.close()));
});

storeConformance({
  name: 'etcd',
  async openStore(cluster): Promise<RecordStore> {
    const proxy = await viaProxy();
    const store = await createEtcdStore({ cluster, endpoints: [`http://${proxy.address}`], requestTimeoutMs: 2000 });
    proxies.set(store, proxy);
    return store;
  },
  capabilities: {
    compact: async () => void (await compactNow(raw)),
    partition: (store) => proxies.get(store)!.cut('reset'),
    heal: (store) => proxies.get(store)!.heal(),
  },
});

// Once as configured by default, once with member keys bound to an etcd lease: the contract holds either way.
// The lease outlasts the restart case's outage (a graceful etcd stop takes up to ~8 s here, and etcd's lessor
// keeps expiring leases while it refuses keepalives); test/member-lease.test.ts covers etcd expiring them.
for (const [NAME, etcdOptions] of [
  ['etcd', {}],
  ['etcd (member leases)', { memberLeaseSeconds: 30 }],
] as const) {
  registryConformance({
    name: NAME,
    async createRegistry(config): Promise<Registry> {
      const proxy = await viaProxy();
      const registry = await createRegistry({ ...config, type: 'etcd', etcd: { endpoints: [`http://${proxy.address}`], ...etcdOptions } });
      proxies.set(registry, proxy);
      return registry;
    },
    capabilities: {
      partition: {
        partition: (registry) => proxies.get(registry)!.cut('reset'),
        heal: (registry) => proxies.get(registry)!.heal(),
      },
      // The child connects on its own from plain configuration.
      crashChild: { kind: 'config', config: (config) => ({ ...config, type: 'etcd', etcd: { endpoints: etcdEndpoints(), ...etcdOptions } }) },
      compact: async () => void (await compactNow(raw)),
      restartServer: () => restartServer('etcd'),
    },
  });
}
