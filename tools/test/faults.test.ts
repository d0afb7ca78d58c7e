import { describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { waitFor } from '@rollcall/conformance';
import { readTestEnv, restartApiServerAndControllers, restartServer, startServer, stopServer } from '@rollcall/tools/testenv';

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

  it('restarts kube-apiserver with the controllers that watch it: right after, a new namespace gets its service account and a pod there is scheduled and run', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(readTestEnv().kubernetes!.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    await restartApiServerAndControllers();
    const name = `faults-${Date.now().toString(36)}`;
    await core.createNamespace({ body: { metadata: { name } } });
    try {
      // The controller manager's service-account controller, then the scheduler and kwok: each within a case's bound, not after a back-off.
      await waitFor(async () => (await core.listNamespacedServiceAccount({ namespace: name })).items.some((sa) => sa.metadata?.name === 'default'), 15_000, `the default service account in ${name}`);
      await core.createNamespacedPod({ namespace: name, body: { metadata: { name: 'p' }, spec: { containers: [{ name: 'main', image: 'registry.invalid/p:1' }] } } });
      await waitFor(async () => (await core.readNamespacedPod({ name: 'p', namespace: name })).status?.phase === 'Running', 15_000, `pod ${name}/p running`);
    } finally {
      await core.deleteNamespace({ name });
    }
  }, 60_000);
});
