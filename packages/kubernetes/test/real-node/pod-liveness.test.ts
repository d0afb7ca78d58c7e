import { AppsV1Api } from '@kubernetes/client-node';
import { createRegistry, type Member, type MemberEvent, type Registry } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { KubeAdmin, serverWait, signalContainer } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registryPlugin } from '../../src/index.js';
import { kubeEnv } from '../kube-env.js';
import { workerDeployment } from './worker-deployment.js';

/**
 * registry.member.liveness=pod on a real kubelet: the quick start's process as a
 * Deployment of workers behind the role's headless Service, its readiness probe
 * the member's liveness, watched by an observer off the cluster (which reads the
 * Service's EndpointSlices, and keeps heartbeats for nothing: it announces nothing).
 */
const admin = new KubeAdmin();
const apps = admin.kc.makeApiClient(AppsV1Api);
const cluster = 'podreal';
let namespace: string;
let observer: Registry;
const events: { at: number; event: MemberEvent }[] = [];
const present = new Map<string, Member>();

const podName = (m: Member) => (m.payload as { pod: string }).pod;
const summary = (id: string) => events.filter((e) => e.event.member.id === id).map((e) => `${e.event.type}${e.event.type === 'removed' ? ` ${e.event.reason}` : ''}`);

beforeAll(async () => {
  namespace = await admin.namespace('podlive', { forPods: true });
  await admin.applyManifest('rollcall-member.yaml', namespace);
  await admin.applyManifest('rollcall-pod-liveness.yaml', namespace);
  await admin.core.createNamespacedService({ namespace, body: { metadata: { name: 'rollcall-worker' }, spec: { clusterIP: 'None', selector: { app: 'pl-workers' }, ports: [{ name: 'probe', port: 8080 }] } } });
  observer = await createRegistry({ type: 'kubernetes', cluster, identity: 'observer', member: { liveness: 'pod' }, kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace } }, { plugins: [registryPlugin as never] });
  observer.watchMembers('worker', (event) => {
    events.push({ at: performance.now(), event });
    if (event.type === 'removed') present.delete(event.member.id);
    else present.set(event.member.id, event.member);
  });
  await apps.createNamespacedDeployment({
    namespace,
    body: workerDeployment({ name: 'pl-workers', role: 'worker', serviceAccount: 'rollcall-member', replicas: 2, cluster, env: [{ name: 'REGISTRY_MEMBER_LIVENESS', value: 'pod' }] }),
  });
  await waitFor(() => present.size === 2, 120_000, serverWait({ what: 'two workers from real pods, in pod mode' }));
}, 180_000);

afterAll(async () => {
  await observer?.close();
  await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

describe('registry.member.liveness=pod on a real kubelet', () => {
  it('each worker\'s Lease says its pod and is never renewed', async () => {
    const leases = await admin.leases(namespace, `rollcall.dev/cluster=${cluster},rollcall.dev/kind=member`);
    expect(leases).toHaveLength(2);
    const versions = leases.map((l) => l.metadata!.resourceVersion);
    for (const lease of leases) {
      const pod = await admin.core.readNamespacedPod({ name: lease.metadata!.ownerReferences![0]!.name, namespace });
      expect(JSON.parse(lease.metadata!.annotations!['rollcall.dev/liveness']!)).toEqual({ mode: 'pod', podUid: pod.metadata!.uid });
    }
    // An observation window, not a wait for something: longer than the default heartbeat interval (5 s), in which a heartbeat would have rewritten them.
    await new Promise((resolve) => setTimeout(resolve, 6000));
    const again = await admin.leases(namespace, `rollcall.dev/cluster=${cluster},rollcall.dev/kind=member`);
    expect(again.map((l) => l.metadata!.resourceVersion)).toEqual(versions);
  });

  it('a container killed (SIGKILL) → its pod not Ready → its member removed (expired, last data); the restarted container is a new member and the old one never comes back', async () => {
    const victim = [...present.values()][0]!;
    const pod = await admin.core.readNamespacedPod({ name: podName(victim), namespace });
    const from = events.length;
    const killedAt = performance.now();
    signalContainer(pod, 'main', 'SIGKILL');
    await waitFor(() => events.slice(from).some((e) => e.event.type === 'removed' && e.event.member.id === victim.id), 30_000, serverWait({ what: 'the killed worker removed' }));
    const removed = events.slice(from).find((e) => e.event.type === 'removed')!;
    expect(removed.event).toMatchObject({ type: 'removed', reason: 'expired', member: { id: victim.id, payload: { pod: podName(victim) } } });
    console.log(`[pod liveness] container SIGKILLed → member removed in ${((removed.at - killedAt) / 1000).toFixed(2)} s`);
    // The kubelet restarts the container: a new process, a new identity, in the same pod.
    await waitFor(() => [...present.values()].some((m) => podName(m) === podName(victim) && m.id !== victim.id), 90_000, serverWait({ what: 'the restarted container announced' }));
    await waitFor(() => present.size === 2, 30_000, serverWait({ what: 'two workers again' }));
    expect(summary(victim.id)).toEqual(['added', 'removed expired']);
    const leases = await admin.leases(namespace, `rollcall.dev/cluster=${cluster},rollcall.dev/kind=member`);
    expect(leases).toHaveLength(2); // the earlier container's Lease was removed by its successor's announce
  }, 150_000);

  it('a pod deleted → its member removed once, never back; its replacement added', async () => {
    const victim = [...present.values()][0]!;
    await admin.core.deleteNamespacedPod({ name: podName(victim), namespace });
    await waitFor(() => !present.has(victim.id), 30_000, serverWait({ what: 'the deleted pod\'s worker removed' }));
    await waitFor(() => present.size === 2, 90_000, serverWait({ what: 'the replacement pod\'s worker' }));
    // SIGTERM: the process withdraws (deleted), unless the slice said not Ready first (expired); either way once.
    const seen = summary(victim.id);
    expect(seen.length).toBe(2);
    expect(seen[0]).toBe('added');
    expect(['removed deleted', 'removed expired']).toContain(seen[1]);
  }, 150_000);
});
