import { afterAll } from 'vitest';
import { createRegistry, type RecordStore, type Registry } from '@rollcall/core';
import { registryConformance, storeConformance } from '@rollcall/conformance';
import { restartServer, TcpProxy } from '@rollcall/tools/testenv';
import { ZookeeperStore } from '../src/index.js';
import { standalone } from './helpers.js';

// Each store and registry reaches ZooKeeper through its own proxy, so one can be cut off alone.
// A cut is a blackhole: the socket stays open and silent, the case the library does not notice by itself.
const proxies = new WeakMap<object, TcpProxy>();
const opened: TcpProxy[] = [];
const SESSION_TIMEOUT_MS = 4000;

async function viaProxy(): Promise<TcpProxy> {
  const proxy = await TcpProxy.start(standalone());
  opened.push(proxy);
  return proxy;
}

afterAll(async () => {
  await Promise.allSettled(opened.map((p) => p.close()));
});

storeConformance({
  name: 'zookeeper',
  async openStore(cluster): Promise<RecordStore> {
    const proxy = await viaProxy();
    const store = await ZookeeperStore.connect({ cluster, connectString: proxy.address, sessionTimeoutMs: SESSION_TIMEOUT_MS, requestTimeoutMs: 1000 });
    proxies.set(store, proxy);
    return store;
  },
  capabilities: {
    partition: (store) => proxies.get(store)!.cut('blackhole'),
    heal: (store) => proxies.get(store)!.heal(),
    // No compact(): ZooKeeper keeps no change history to discard; REVISION_TOO_OLD for unknown revisions is tested in store.test.ts.
  },
});

registryConformance({
  name: 'zookeeper',
  async createRegistry(config): Promise<Registry> {
    const proxy = await viaProxy();
    const registry = await createRegistry({ ...config, type: 'zookeeper', zookeeper: { connectString: proxy.address, sessionTimeoutMs: SESSION_TIMEOUT_MS } });
    proxies.set(registry, proxy);
    return registry;
  },
  capabilities: {
    partition: {
      partition: (registry) => proxies.get(registry)!.cut('blackhole'),
      heal: (registry) => proxies.get(registry)!.heal(),
    },
    // The child connects on its own from plain configuration.
    crashChild: { kind: 'config', config: (config) => ({ ...config, type: 'zookeeper', zookeeper: { connectString: standalone(), sessionTimeoutMs: SESSION_TIMEOUT_MS } }) },
    restartServer: () => restartServer('zookeeper'),
  },
});
