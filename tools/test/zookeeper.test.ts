import { afterAll, describe, expect, it } from 'vitest';
import zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import {
  killZookeeperEnsembleLeader,
  readTestEnv,
  startServer,
  waitForZookeeperEnsembleLeader,
  zookeeperEnsembleLeader,
  zookeeperMode,
} from '@rollcall/tools/testenv';

function connected(connectString: string): Promise<Client> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 10_000 });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ZooKeeper session with ${connectString} within 15 s`)), 15_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve(client);
    });
    client.connect();
  });
}

const create = (c: Client, path: string, data: string) =>
  new Promise<string>((resolve, reject) => c.create(path, Buffer.from(data), zookeeper.CreateMode.EPHEMERAL, (e, p) => (e ? reject(e) : resolve(p))));
const getData = (c: Client, path: string) => new Promise<string>((resolve, reject) => c.getData(path, (e, d) => (e ? reject(e) : resolve(d.toString()))));

describe('zookeeper (standalone)', () => {
  it('reports standalone mode and stores an ephemeral znode', async () => {
    const { zookeeper: zk } = readTestEnv();
    expect(await zookeeperMode(zk!.host, zk!.port)).toBe('standalone');
    const client = await connected(zk!.connectString);
    try {
      const path = `/smoke-${process.pid}-${Date.now()}`;
      await create(client, path, 'hello');
      expect(await getData(client, path)).toBe('hello');
    } finally {
      client.close();
    }
  });
});

describe('zookeeper-ensemble', () => {
  let killedUnit: string | undefined;
  afterAll(async () => {
    // leave the ensemble whole for the next test run
    if (killedUnit) await startServer(killedUnit);
  });

  it('elects a new leader after its leader is killed, and the killed member rejoins', async () => {
    const { zookeeperEnsemble } = readTestEnv();
    const before = await waitForZookeeperEnsembleLeader();
    expect(before.unit).toMatch(/^zookeeper-ensemble-\d$/);

    const killed = await killZookeeperEnsembleLeader();
    killedUnit = killed.unit;
    expect(killed.id).toBe(before.id);

    const after = await waitForZookeeperEnsembleLeader({ excludingId: killed.id, timeoutMs: 30_000 });
    expect(after.id).not.toBe(killed.id);

    // the two survivors form a quorum that serves writes
    const client = await connected(zookeeperEnsemble!.connectString);
    try {
      const path = `/smoke-ensemble-${process.pid}-${Date.now()}`;
      await create(client, path, 'after-failover');
      expect(await getData(client, path)).toBe('after-failover');
    } finally {
      client.close();
    }

    await startServer(killed.unit);
    killedUnit = undefined;
    expect(await zookeeperMode(killed.host, killed.clientPort)).toBe('follower');
    expect((await zookeeperEnsembleLeader())?.id).toBe(after.id);
  });
});
