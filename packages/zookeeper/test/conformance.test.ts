import { afterAll } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
import type { RecordStore } from '@rollcall/core/spi';
import { registryConformance, storeConformance } from '@rollcall/conformance';
import { ClientProxies, restartServer } from '@rollcall/tools/testenv';
import { createZookeeperStore, encodeKey } from '../src/index.js';
import { rawClient, standalone } from './helpers.js';

// Each store and registry reaches ZooKeeper through its own proxy, so one can be cut off alone.
// A cut is a blackhole: the socket stays open and silent, the case the library does not notice by itself.
const proxies = new ClientProxies(standalone(), 'blackhole');
const SESSION_TIMEOUT_MS = 4000;

afterAll(() => proxies.close());

storeConformance({
  name: 'zookeeper',
  openStore: (cluster): Promise<RecordStore> => proxies.open((proxy) => createZookeeperStore({ cluster, connectString: proxy.address, sessionTimeoutMs: SESSION_TIMEOUT_MS, requestTimeoutMs: 1000, openAcl: true })),
  capabilities: {
    partition: (store) => proxies.cut(store),
    heal: (store) => proxies.heal(store),
    // No compact(): ZooKeeper keeps no change history to discard; REVISION_TOO_OLD for unknown revisions is tested in store.test.ts.
    overwriteRaw: async (cluster, key, text) => {
      const raw = await rawClient(standalone());
      try {
        await raw.setData(`/rollcall/${cluster}/${encodeKey(key)}`, text);
      } finally {
        raw.close();
      }
      return true;
    },
  },
});

// Once with heartbeats on the member records, once with one elected reaper per role reading heartbeat records
// (registry.member.liveness=reaper): the contract holds either way.
for (const [NAME, liveness] of [
  ['zookeeper', undefined],
  ['zookeeper (reaper liveness)', 'reaper'],
] as const) {
  registryConformance({
    name: NAME,
    liveness,
    createRegistry: (config): Promise<Registry> => proxies.open((proxy) => createRegistry({ ...config, type: 'zookeeper', zookeeper: { connectString: proxy.address, sessionTimeoutMs: SESSION_TIMEOUT_MS, openAcl: true } })),
    capabilities: {
      partition: {
        partition: (registry) => proxies.cut(registry),
        heal: (registry) => proxies.heal(registry),
      },
      // The child connects on its own from plain configuration.
      crashChild: { kind: 'config', config: (config) => ({ ...config, type: 'zookeeper', zookeeper: { connectString: standalone(), sessionTimeoutMs: SESSION_TIMEOUT_MS, openAcl: true } }) },
      restartServer: () => restartServer('zookeeper'),
      // One-shot watches read a node after its notification: a mark followed at once by its delete may be seen as the delete alone.
      foldingWatch: true,
    },
  });
}
