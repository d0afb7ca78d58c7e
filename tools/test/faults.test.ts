import { describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { readTestEnv, restartServer, startServer, stopServer } from '@rollcall/tools/testenv';

describe('fault helpers', () => {
  it('stops and starts etcd, which keeps its data', async () => {
    const env = readTestEnv();
    const key = `/smoke-restart/${Date.now()}`;
    const before = new Etcd3({ hosts: env.etcd!.endpoints });
    await before.put(key).value('kept');
    before.close();

    await stopServer('etcd');
    const down = new Etcd3({ hosts: env.etcd!.endpoints, dialTimeout: 500 });
    await expect(down.get(key).string()).rejects.toThrow();
    down.close();

    await startServer('etcd');
    const after = new Etcd3({ hosts: env.etcd!.endpoints });
    expect(await after.get(key).string()).toBe('kept');
    after.close();
  });

  it('restarts kube-apiserver alone, and it serves again', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(readTestEnv().kubernetes!.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    await restartServer('kube-apiserver');
    const ns = await core.readNamespace({ name: readTestEnv().kubernetes!.namespace });
    expect(ns.status?.phase).toBe('Active');
  });
});
