import { afterAll } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
import type { RecordStore } from '@rollcall/core/spi';
import { registryConformance, storeConformance } from '@rollcall/conformance';
import { ClientProxies, compactServer, restartServer } from '@rollcall/tools/testenv';
import { createEtcdStore } from '../src/index.js';
import { etcdEndpoints, rawClient } from './support/etcd.js';

// Each store and registry of the suite reaches etcd through its own proxy, so one can be cut off alone.
const proxies = new ClientProxies(etcdEndpoints()[0]!, 'reset');

afterAll(async () => {
  await proxies.close();
});

storeConformance({
  name: 'etcd',
  openStore: (cluster): Promise<RecordStore> => proxies.open((proxy) => createEtcdStore({ cluster, endpoints: [`http://${proxy.address}`], requestTimeoutMs: 2000 })),
  capabilities: {
    compact: async () => void (await compactServer('etcd')),
    partition: (store) => proxies.cut(store),
    heal: (store) => proxies.heal(store),
    overwriteRaw: async (cluster, key, text) => {
      const raw = rawClient();
      try {
        await raw.put(`/rollcall/${cluster}/${key}`).value(text);
      } finally {
        raw.close();
      }
      return true;
    },
  },
});

// Once as configured by default, once with member keys bound to an etcd lease, once with member liveness judged by
// one elected reaper per role (registry.member.liveness=reaper): the contract holds every way.
// The lease outlasts the restart case's outage (a graceful etcd stop takes up to ~8 s here, and etcd's lessor
// keeps expiring leases while it refuses keepalives); test/member-lease.test.ts covers etcd expiring them.
for (const [NAME, etcdOptions, liveness] of [
  ['etcd', {}, undefined],
  ['etcd (member leases)', { memberLeaseSeconds: 30 }, undefined],
  ['etcd (reaper liveness)', {}, 'reaper'],
] as const) {
  registryConformance({
    name: NAME,
    liveness,
    createRegistry: (config): Promise<Registry> => proxies.open((proxy) => createRegistry({ ...config, type: 'etcd', etcd: { endpoints: [`http://${proxy.address}`], ...etcdOptions } })),
    capabilities: {
      partition: {
        partition: (registry) => proxies.cut(registry),
        heal: (registry) => proxies.heal(registry),
      },
      // The child connects on its own from plain configuration.
      crashChild: { kind: 'config', config: (config) => ({ ...config, type: 'etcd', etcd: { endpoints: etcdEndpoints(), ...etcdOptions } }) },
      compact: async () => void (await compactServer('etcd')),
      restartServer: () => restartServer('etcd'),
    },
  });
}
