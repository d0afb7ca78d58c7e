import { afterAll, describe, it } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
import { MigrateStore } from '@rollcall/migrate';
import { registryConformance, storeConformance, type ConformanceConfig } from '@rollcall/conformance';
import { createEtcdStore } from '@rollcall/etcd';
import { createZookeeperStore } from '@rollcall/zookeeper';
import { ClientProxies, compactServer, restartServer } from '@rollcall/tools/testenv';
import { migrationsUnderTest, soakBackend } from '../src/backends.js';

// The conformance suite on a real pair: migrate(zookeeper→etcd), each side through a proxy of its own per client,
// so one client can be cut off from both. (migrate(memory→memory) runs in @rollcall/migrate; the rolling
// restarts to kubernetes in rolling-restart.test.ts.)
const ZK_SESSION_TIMEOUT_MS = 4000;

if (migrationsUnderTest().length === 0) {
  describe('migrate(zookeeper→etcd) conformance', () => it.skip('[skipped: MIGRATE_FROM is empty] no migration under test', () => {}));
} else {
  const zk = soakBackend('zookeeper').server()!;
  const etcd = soakBackend('etcd').server()!;
  const fromProxies = new ClientProxies(zk, 'reset');
  const toProxies = new ClientProxies(etcd, 'reset');
  afterAll(async () => {
    await fromProxies.close();
    await toProxies.close();
  });

  const sections = (zkAddress: string, etcdAddress: string) => ({
    from: { type: 'zookeeper', zookeeper: { connectString: zkAddress, sessionTimeoutMs: ZK_SESSION_TIMEOUT_MS, openAcl: true } },
    to: { type: 'etcd', etcd: { endpoints: [`http://${etcdAddress}`] } },
  });
  const direct = () => sections(`${zk.host}:${zk.port}`, `${etcd.host}:${etcd.port}`);
  const throughProxies = <C extends object>(open: (zkAddress: string, etcdAddress: string) => Promise<C>) =>
    fromProxies.open((pf) => toProxies.open((pt) => open(pf.address, pt.address)));
  const cut = (client: object) => {
    fromProxies.cut(client);
    toProxies.cut(client);
  };
  const heal = (client: object) => {
    fromProxies.heal(client);
    toProxies.heal(client);
  };
  const restartBoth = async () => {
    await restartServer('zookeeper');
    await restartServer('etcd');
  };

  storeConformance({
    name: 'migrate(zookeeper→etcd)',
    openStore: (cluster) =>
      throughProxies(async (zkAddress, etcdAddress) => {
        const from = await createZookeeperStore({ cluster, connectString: zkAddress, sessionTimeoutMs: ZK_SESSION_TIMEOUT_MS, requestTimeoutMs: 1000, openAcl: true });
        return new MigrateStore(from, await createEtcdStore({ cluster, endpoints: [`http://${etcdAddress}`], requestTimeoutMs: 2000 }));
      }),
    capabilities: {
      // etcd's compaction ends a watch from before it: the merged watch ends REVISION_TOO_OLD and the caller relists.
      compact: async () => void (await compactServer('etcd')),
      partition: cut,
      heal,
    },
  });

  registryConformance({
    name: 'migrate(zookeeper→etcd)',
    createRegistry: (config: ConformanceConfig): Promise<Registry> => throughProxies((zkAddress, etcdAddress) => createRegistry({ ...config, type: 'migrate', migrate: sections(zkAddress, etcdAddress) })),
    capabilities: {
      partition: { partition: cut, heal },
      crashChild: { kind: 'config', config: (config) => ({ ...config, type: 'migrate', migrate: direct() }) },
      compact: async () => void (await compactServer('etcd')),
      restartServer: restartBoth,
    },
  });
}
