import { registryConformance, storeConformance } from '@rollcall/conformance';
import { createRegistry, type Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { MemoryStore, sharedMemoryBackend } from '@rollcall/core/testing';
import { MigrateStore } from '../src/index.js';

// registry.type=migrate between two named in-process backends: the suite proves the merged view keeps the SPI's contract.
const FROM = 'conformance-migrate-from';
const TO = 'conformance-migrate-to';
const from = sharedMemoryBackend(FROM);
const to = sharedMemoryBackend(TO);
const sidesOf = (store: MigrateStore) => [store.from as MemoryStore, store.to as MemoryStore];
const openMigrateStore = (cluster: string) => new MigrateStore(new MemoryStore({ backend: from, cluster }), new MemoryStore({ backend: to, cluster }));
const compact = () => {
  from.compact();
  to.compact();
};

storeConformance({
  name: 'migrate(memory→memory)',
  openStore: async (cluster) => openMigrateStore(cluster),
  capabilities: {
    compact,
    partition: (store) => sidesOf(store as MigrateStore).forEach((side) => side.partition()),
    heal: (store) => sidesOf(store as MigrateStore).forEach((side) => side.heal()),
  },
});

const connected = new Set<MemoryStore>();
const sidesOfRegistry = (registry: Registry) => sidesOf(registryStore(registry) as MigrateStore);

registryConformance({
  name: 'migrate(memory→memory)',
  createRegistry: async (config) => {
    const registry = await createRegistry({ ...config, type: 'migrate', migrate: { from: { type: 'memory', memory: { name: FROM } }, to: { type: 'memory', memory: { name: TO } } } });
    sidesOfRegistry(registry).forEach((side) => connected.add(side));
    return registry;
  },
  capabilities: {
    partition: {
      partition: (registry) => sidesOfRegistry(registry).forEach((side) => side.partition()),
      heal: (registry) => sidesOfRegistry(registry).forEach((side) => side.heal()),
    },
    crashChild: { kind: 'ipc-store', openStore: openMigrateStore },
    compact,
    restartServer: async () => {
      // Both "servers" down at once for 500 ms, their history dropped, the records kept (as memory.test.ts does for one).
      const stores = [...connected];
      stores.forEach((s) => s.partition());
      compact();
      await new Promise((resolve) => setTimeout(resolve, 500)); // the outage itself, not a synchronisation
      stores.forEach((s) => s.heal());
    },
  },
});
