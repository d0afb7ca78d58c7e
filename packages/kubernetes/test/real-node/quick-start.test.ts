import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppsV1Api, loadAllYaml, type V1Deployment, type V1Service } from '@kubernetes/client-node';
import { createRegistry, type Registry } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { KubeAdmin, onRealNode, realNode, serverWait } from '@rollcall/tools/testenv';
import { registryPlugin } from '../../src/index.js';
import { kubeEnv } from '../kube-env.js';

const admin = new KubeAdmin();
const MARKER = '<!-- quick-start-deployment';
let namespace: string;
let observer: Registry | undefined;

/** The README's block, as written: the role's Service and the Deployment. */
function quickStart(): { service: V1Service; deployment: V1Deployment } {
  const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
  const after = readme.slice(readme.indexOf(MARKER));
  const block = after.match(/```yaml\n([\s\S]*?)```/)?.[1];
  if (!block) throw new Error('no yaml block after the quick-start marker in README.md');
  const docs = loadAllYaml(block) as (V1Service | V1Deployment)[];
  expect(docs.map((d) => d.kind)).toEqual(['Service', 'Deployment']);
  return { service: docs[0] as V1Service, deployment: docs[1] as V1Deployment };
}

beforeAll(async () => {
  namespace = await admin.namespace('quick-start', { forPods: true });
  await admin.applyManifest('rollcall-coordinator.yaml', namespace);
  await admin.applyManifest('rollcall-pod-liveness.yaml', namespace);
});

afterAll(async () => {
  await observer?.close();
  await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

describe("the kubernetes README's Deployment", () => {
  it('runs as written on a real node (the image replaced, placed on the node): three masters announced, ready, one leading, in the pod liveness mode', async () => {
    const { service, deployment } = quickStart();
    const spec = deployment.spec!.template.spec!;
    expect(spec.containers).toHaveLength(1);
    spec.containers[0]!.image = realNode().runtimeImage;
    // the test environment's real node is tainted so that only pods asking for it land there
    deployment.spec!.template.spec = onRealNode(spec);
    await admin.core.createNamespacedService({ namespace, body: service });
    observer = await createRegistry({ type: 'kubernetes', cluster: 'orders', identity: 'observer', member: { liveness: 'pod' }, kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace } }, { plugins: [registryPlugin as never] });
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
    // Pod mode: each master's Lease says its pod, and is not renewed.
    const leases = await admin.leases(namespace, 'rollcall.dev/cluster=orders,rollcall.dev/kind=member');
    expect(leases.map((l) => JSON.parse(l.metadata!.annotations!['rollcall.dev/liveness']!).mode)).toEqual(['pod', 'pod', 'pod']);
  }, 240_000);
});
