import { afterAll } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
import { registryConformance, storeConformance } from '@rollcall/conformance';
import { restartServer, TcpProxy } from '@rollcall/tools/testenv';
import { createMysqlStore, type MysqlStore } from '../src/index.js';
import { mariadb, testDatabase, testOptions } from './support/mariadb.js';

const db = testDatabase('conformance');
// Each store and registry reaches MariaDB through a proxy of its own, so one can be cut off alone.
const proxies = new WeakMap<object, TcpProxy>();
const opened: TcpProxy[] = [];
afterAll(async () => void (await Promise.allSettled(opened.map((p) => p.close()))));

async function viaProxy(): Promise<TcpProxy> {
  const proxy = await TcpProxy.start(mariadb());
  opened.push(proxy);
  return proxy;
}

const mysqlSection = (overrides: { host?: string; port?: number } = {}) => {
  const { tls: _tls, ...section } = testOptions(db.name, overrides);
  return section;
};

let compactor: MysqlStore | undefined;
const compact = async () => {
  compactor ??= await createMysqlStore({ cluster: 'compactor', options: testOptions(db.name), requestTimeoutMs: 5000 });
  await compactor.database.purgeChanges({ all: true });
};
afterAll(async () => compactor?.close());

storeConformance({
  name: 'mysql',
  async openStore(cluster) {
    const proxy = await viaProxy();
    const store = await createMysqlStore({ cluster, options: testOptions(db.name, { host: '127.0.0.1', port: proxy.port }), requestTimeoutMs: 2000 });
    proxies.set(store, proxy);
    return store;
  },
  capabilities: {
    compact,
    partition: (store) => proxies.get(store)!.cut('reset'),
    heal: (store) => proxies.get(store)!.heal(),
  },
});

registryConformance({
  name: 'mysql',
  async createRegistry(config): Promise<Registry> {
    const proxy = await viaProxy();
    const registry = await createRegistry({ ...config, type: 'mysql', mysql: mysqlSection({ host: '127.0.0.1', port: proxy.port }) });
    proxies.set(registry, proxy);
    return registry;
  },
  capabilities: {
    partition: {
      partition: (registry) => proxies.get(registry)!.cut('reset'),
      heal: (registry) => proxies.get(registry)!.heal(),
    },
    // The child connects on its own, straight to MariaDB.
    crashChild: { kind: 'config', config: (config) => ({ ...config, type: 'mysql', mysql: mysqlSection() }) },
    compact,
    restartServer: () => restartServer('mariadb'),
  },
});
