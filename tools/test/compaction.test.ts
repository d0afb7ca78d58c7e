import { describe, expect, it } from 'vitest';
import { Etcd3 } from 'etcd3';
import { CoordinationV1Api, CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { compactServer, readTestEnv } from '@rollcall/tools/testenv';

/** Every event of a Lease watch from `resourceVersion` that the server ends after one second. */
function watchLeases(kc: KubeConfig, namespace: string, name: string, resourceVersion: string): Promise<{ type: string; code?: number }[]> {
  return new Promise((resolve, reject) => {
    const events: { type: string; code?: number }[] = [];
    void new Watch(kc)
      .watch(
        `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
        { resourceVersion, fieldSelector: `metadata.name=${name}`, timeoutSeconds: 1 },
        (type, object: { code?: number }) => events.push({ type, code: object.code }),
        (err: unknown) => (err ? reject(err as Error) : resolve(events)),
      )
      .catch(reject);
  });
}

describe('compactServer', () => {
  it('etcd: reads at a revision below the compaction are refused as compacted', async () => {
    const client = new Etcd3({ hosts: readTestEnv().etcd!.endpoints });
    try {
      const key = `/smoke-compact/${Date.now()}`;
      const first = await client.put(key).value('a').exec();
      await client.put(key).value('b');
      expect(await client.get(key).revision(first.header.revision).string()).toBe('a');
      const { revision } = await compactServer('etcd');
      expect(revision).toBeGreaterThan(Number(first.header.revision));
      await expect(client.get(key).revision(first.header.revision).string()).rejects.toThrow(/compacted/);
      expect(await client.get(key).string()).toBe('b');
    } finally {
      client.close();
    }
  });

  it('kubernetes: a watch from a resourceVersion before the compaction gets 410 Gone, on a server of any age', async () => {
    const { kubeconfig, namespace } = readTestEnv().kubernetes!;
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const leases = kc.makeApiClient(CoordinationV1Api);
    const name = `smoke-compact-${Date.now().toString(36)}`;
    const lease = await leases.createNamespacedLease({ namespace, body: { metadata: { name }, spec: { holderIdentity: 'smoke' } } });
    const resourceVersion = lease.metadata!.resourceVersion!;
    // Compaction alone would change nothing here: kube-apiserver serves this watch from its watch cache.
    expect(await watchLeases(kc, namespace, name, resourceVersion)).toEqual([]);
    for (let round = 1; round <= 2; round++) {
      const { revision } = await compactServer('kubernetes');
      expect(revision).toBeGreaterThan(Number(resourceVersion));
      expect(await watchLeases(kc, namespace, name, resourceVersion), `round ${round}`).toEqual([{ type: 'ERROR', code: 410 }]);
    }
    // It serves again, and what it stored is kept.
    const core = kc.makeApiClient(CoreV1Api);
    expect((await core.readNamespace({ name: namespace })).status?.phase).toBe('Active');
    expect((await leases.readNamespacedLease({ name, namespace })).spec?.holderIdentity).toBe('smoke');
    await leases.deleteNamespacedLease({ name, namespace });
  });

  it('refuses a server without a change history to compact', async () => {
    await expect(compactServer('zookeeper' as never)).rejects.toThrow('cannot compact "zookeeper"');
  });
});
