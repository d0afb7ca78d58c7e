import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createRegistry, type Registry } from '@rollcall/core';
import { mintServiceAccountToken } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { objectName, registryPlugin } from '../src/index.js';
import { Admin } from './admin.js';
import { kubeEnv, registryEvent } from './kube-env.js';

const admin = new Admin();
let namespace: string;
let child: ChildProcess | undefined;
let observer: Registry | undefined;

/**
 * Starts the fixture in its own mount namespace with a service-account token,
 * CA and namespace file at /var/run/secrets/kubernetes.io/serviceaccount, where
 * client-node's in-cluster config looks: the files a kubelet mounts.
 */
function runInPod(env: Record<string, string>, token: string): ChildProcess {
  const ca = readFileSync(kubeEnv().caFile, 'utf8');
  const dir = '/var/run/secrets/kubernetes.io/serviceaccount';
  const script = [
    'set -e',
    'mkdir -p /var/run/secrets',
    'mount -t tmpfs tmpfs /var/run/secrets',
    `mkdir -p ${dir}`,
    `printf %s "$SA_TOKEN" > ${dir}/token`,
    `printf %s "$SA_CA" > ${dir}/ca.crt`,
    `printf %s "$POD_NAMESPACE" > ${dir}/namespace`,
    'unset SA_TOKEN SA_CA',
    'exec node test/fixtures/in-pod-member.mjs',
  ].join('\n');
  const url = new URL(kubeEnv().server);
  const childEnv: Record<string, string> = { PATH: process.env.PATH!, HOME: '/nonexistent', KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port, SA_TOKEN: token, SA_CA: ca, ...env };
  return spawn('unshare', ['-m', 'sh', '-c', script], { env: childEnv, stdio: ['ignore', 'pipe', 'inherit'] });
}

beforeAll(async () => {
  namespace = await admin.namespace('inpod', { forPods: true });
  await admin.applyManifest('rollcall-member.yaml', namespace);
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await observer?.close();
});

describe('running in a pod', () => {
  it('connects with the in-cluster service account, owns its member Lease by its pod, and the pod deletion removes the member at once', async () => {
    const pod = await admin.core.createNamespacedPod({ namespace, body: { metadata: { name: 'worker-0' }, spec: { containers: [{ name: 'main', image: 'registry.invalid/worker:1' }] } } });
    observer = await createRegistry({ type: 'kubernetes', cluster: 'inpod', identity: 'observer', kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace } }, { plugins: [registryPlugin as never] });
    await observer.members('worker'); // the observer reads workers
    const added = registryEvent(observer, 'memberAdded', 30_000, (e) => e.member.id === 'worker-0');
    const token = await mintServiceAccountToken(namespace, 'rollcall-member');
    child = runInPod({ POD_NAME: 'worker-0', POD_NAMESPACE: namespace, POD_UID: pod.metadata!.uid!, TEST_CLUSTER: 'inpod' }, token);
    const lines = createInterface({ input: child.stdout! });
    await new Promise<void>((resolve, reject) => {
      lines.on('line', (line) => line === 'ANNOUNCED' && resolve());
      child!.once('exit', (code) => reject(new Error(`the in-pod process exited with ${code}`)));
    });
    expect((await added).member.payload).toEqual({ pod: 'worker-0' });
    const lease = await admin.coordination.readNamespacedLease({ name: objectName('inpod', 'member/worker/worker-0'), namespace });
    expect(lease.metadata!.ownerReferences).toEqual([expect.objectContaining({ apiVersion: 'v1', kind: 'Pod', name: 'worker-0', uid: pod.metadata!.uid })]);

    // The member's lease is 60 s: a removal within this bound can only be the garbage collector's.
    const removed = registryEvent(observer, 'memberRemoved', 30_000, (e) => e.member.id === 'worker-0');
    const deletedAt = performance.now();
    await admin.core.deleteNamespacedPod({ name: 'worker-0', namespace, gracePeriodSeconds: 0 });
    expect((await removed).reason).toBe('deleted');
    expect(performance.now() - deletedAt).toBeLessThan(30_000);
  }, 90_000); // above the sum of its bounds (two 30 s waits and the process's start), so a late step fails its own bound, named
});
