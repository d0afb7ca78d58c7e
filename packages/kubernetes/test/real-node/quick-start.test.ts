import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppsV1Api, loadYaml, type V1Deployment } from '@kubernetes/client-node';
import { createRegistry, type Registry } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { KubeAdmin, onRealNode, realNode, serverWait } from '@rollcall/tools/testenv';
import { registryPlugin } from '../../src/index.js';
import { kubeEnv } from '../kube-env.js';

const admin = new KubeAdmin();
const MARKER = '<!-- quick-start-deployment';
let namespace: string;
let observer: Registry | undefined;

/** The README's Deployment block, as written. */
function quickStartDeployment(): V1Deployment {
  const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
  const after = readme.slice(readme.indexOf(MARKER));
  const block = after.match(/```yaml\n([\s\S]*?)```/)?.[1];
  if (!block) throw new Error('no yaml block after the quick-start marker in README.md');
  return loadYaml<V1Deployment>(block);
}

beforeAll(async () => {
  namespace = await admin.namespace('quick-start', { forPods: true });
  await admin.applyManifest('rollcall-coordinator.yaml', namespace);
});

afterAll(async () => {
  await observer?.close();
  await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

describe("the kubernetes README's Deployment", () => {
  it('runs as written on a real node (the image replaced, placed on the node): three masters announced, ready, one leading', async () => {
    const deployment = quickStartDeployment();
    const spec = deployment.spec!.template.spec!;
    expect(spec.containers).toHaveLength(1);
    spec.containers[0]!.image = realNode().runtimeImage;
    // the test environment's real node is tainted so that only pods asking for it land there
    deployment.spec!.template.spec = onRealNode(spec);
    observer = await createRegistry({ type: 'kubernetes', cluster: 'orders', identity: 'observer', kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace } }, { plugins: [registryPlugin as never] });
    const masters = new Set<string>();
    observer.watchMembers('master', (e) => (e.type === 'removed' ? masters.delete(e.member.id) : masters.add(e.member.id)));
    let leader: string | undefined;
    observer.observe('scheduler').on('changed', (e) => (leader = e.leader?.identity));
    await admin.kc.makeApiClient(AppsV1Api).createNamespacedDeployment({ namespace, body: deployment });
    await waitFor(() => masters.size === 3 && leader !== undefined && masters.has(leader), 120_000, serverWait({ what: 'three masters and a leader among them' }));
    await waitFor(
      async () => {
        const pods = (await admin.core.listNamespacedPod({ namespace, labelSelector: 'app=orders-master' })).items;
        return pods.length === 3 && pods.every((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
      },
      60_000,
      serverWait({ what: 'three Ready pods (the readiness probe answered)' }),
    );
  }, 240_000);
});
