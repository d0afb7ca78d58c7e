import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppsV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { createRegistry, type LeaderObserver, type Member, type Registry } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { followPodLogs, KubeAdmin, serverWait, signalContainer } from '@rollcall/tools/testenv';
import { registryPlugin } from '../../src/index.js';
import { kubeEnv } from '../kube-env.js';
import { judgeRollout } from './rollout-verdict.js';
import { WORKER_POD_LABEL, workerDeployment } from './worker-deployment.js';

/**
 * Rollcall in real pods: the quick start's process (examples/worker.mjs, in the runtime
 * image) as two Deployments — masters under the coordinator service account, workers
 * under the member account — on the real node, watched by an observer off the cluster.
 */
const admin = new KubeAdmin();
const apps = admin.kc.makeApiClient(AppsV1Api);
const cluster = 'real';
let namespace: string;
let observer: Registry;
let leader: LeaderObserver;

interface Seen {
  at: number;
  type: 'added' | 'removed';
  member: Member;
  reason?: string;
}
const seen: Seen[] = [];
const members = new Map<string, Member>();
const leaders: { at: number; identity?: string; fencingToken?: number }[] = [];

const current = (role: string) => [...members.values()].filter((m) => m.role === role);
const leaderNow = () => leaders.at(-1);

beforeAll(async () => {
  namespace = await admin.namespace('deploy', { forPods: true });
  await admin.applyManifest('rollcall-coordinator.yaml', namespace);
  await admin.applyManifest('rollcall-member.yaml', namespace);
  observer = await createRegistry({ type: 'kubernetes', cluster, identity: 'observer', kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace } }, { plugins: [registryPlugin as never] });
  for (const role of ['master', 'worker']) {
    observer.watchMembers(role, (event) => {
      if (event.type === 'added') members.set(event.member.id, event.member);
      if (event.type === 'removed') members.delete(event.member.id);
      if (event.type !== 'updated') seen.push({ at: Date.now(), type: event.type, member: event.member, reason: event.type === 'removed' ? event.reason : undefined });
    });
  }
  leader = observer.observe('scheduler');
  leader.on('changed', ({ leader: holder }) => leaders.push({ at: Date.now(), identity: holder?.identity, fencingToken: holder?.fencingToken }));
  await apps.createNamespacedDeployment({ namespace, body: workerDeployment({ name: 'masters', role: 'master', serviceAccount: 'rollcall-coordinator', replicas: 3, cluster }) });
  await apps.createNamespacedDeployment({ namespace, body: workerDeployment({ name: 'workers', role: 'worker', serviceAccount: 'rollcall-member', replicas: 4, cluster }) });
  await waitFor(() => current('master').length === 3 && current('worker').length === 4 && leaderNow()?.identity !== undefined, 120_000, serverWait({ what: '3 masters, 4 workers and a leader, from real pods' }));
}, 180_000);

afterAll(async () => {
  await observer?.close();
  await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

/** The pod of a member (its payload names it). */
async function podOf(member: Member) {
  return admin.core.readNamespacedPod({ name: (member.payload as { pod: string }).pod, namespace });
}

describe('Rollcall in real pods', () => {
  it('runs with in-cluster credentials under the shipped Roles: every member Lease owned by its pod, written by its own service account', async () => {
    const leases = await admin.leases(namespace, `rollcall.dev/cluster=${cluster},rollcall.dev/kind=member`);
    expect(leases).toHaveLength(7);
    for (const lease of leases) {
      const owner = lease.metadata?.ownerReferences?.[0];
      expect(owner?.kind).toBe('Pod');
      const pod = await admin.core.readNamespacedPod({ name: owner!.name, namespace });
      expect(owner?.uid).toBe(pod.metadata?.uid);
    }
    const writers = new Set(
      readFileSync(kubeEnv().auditLogPath, 'utf8')
        .split('\n')
        .filter((line) => line.includes(`"namespace":"${namespace}"`) && line.includes('"resource":"leases"'))
        .map((line) => JSON.parse(line) as { verb: string; requestURI: string; user: { username: string } })
        // a registry checks its permissions on open with dry runs, which write nothing
        .filter((e) => e.verb === 'create' && !e.requestURI.includes('dryRun='))
        .map((e) => e.user.username),
    );
    expect(writers).toEqual(new Set([`system:serviceaccount:${namespace}:rollcall-coordinator`, `system:serviceaccount:${namespace}:rollcall-member`]));
  });

  it('a rolling update of each Deployment: one leader at every instant, rising tokens, no lost or phantom member event, every old process withdrawn', async () => {
    const follower = followPodLogs(admin.kc, namespace, `${WORKER_POD_LABEL}=yes`, 'main');
    try {
      await waitFor(() => follower.logs.filter((l) => l.lines.some((line) => line.includes('"announced"'))).length === 7, 30_000, serverWait({ what: 'the logs of 7 running processes' }));
      const viewAtStart = new Set(members.keys());
      const from = seen.length;
      for (const name of ['masters', 'workers']) {
        // `kubectl rollout restart`: a merge patch of the template, which the controller's own writes cannot conflict with
        const restart = { spec: { template: { metadata: { annotations: { 'rollcall.test/restarted': String(Date.now()) } } } } };
        await apps.patchNamespacedDeployment({ name, namespace, body: restart }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
        await waitFor(
          async () => {
            const d = await apps.readNamespacedDeployment({ name, namespace });
            const want = d.spec!.replicas!;
            return (d.status?.observedGeneration ?? 0) >= d.metadata!.generation! && d.status?.updatedReplicas === want && d.status?.replicas === want && d.status?.availableReplicas === want;
          },
          240_000,
          serverWait({ what: `the rollout of ${name}` }),
        );
      }
      // every old process gone and its log read to the end
      await waitFor(
        async () => {
          const pods = new Set((await admin.core.listNamespacedPod({ namespace, labelSelector: `${WORKER_POD_LABEL}=yes` })).items.map((p) => p.metadata!.name!));
          return pods.size === 7 && follower.logs.every((l) => l.ended || pods.has(l.pod));
        },
        120_000,
        serverWait({ what: 'the old pods gone, their logs ended' }),
      );
      const fresh = await createRegistry({ type: 'kubernetes', cluster, identity: 'auditor', kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace } }, { plugins: [registryPlugin as never] });
      const viewAtEnd = new Set([...(await fresh.members('master')), ...(await fresh.members('worker'))].map((m) => m.id));
      await fresh.close();
      const events = seen.slice(from).map((e) => ({ type: e.type, id: e.member.id, reason: e.reason }));
      const verdict = judgeRollout({ logs: follower.logs, viewAtStart, events, viewAtEnd });
      expect(verdict).toEqual([]);
      // the rollout replaced every process and moved leadership at least once
      expect([...viewAtEnd].some((id) => viewAtStart.has(id))).toBe(false);
      expect(follower.logs.filter((l) => l.lines.some((line) => line.includes('"elected"'))).length).toBeGreaterThanOrEqual(2);
    } finally {
      follower.stop();
    }
  }, 600_000);

  it('a leader container killed inside (SIGKILL): its member expires with its last data and another master leads, with a higher fencing token', async () => {
    const before = leaderNow()!;
    const victim = members.get(before.identity!)!;
    const from = seen.length;
    signalContainer(await podOf(victim), 'main', 'SIGKILL');
    await waitFor(() => seen.slice(from).some((e) => e.type === 'removed' && e.member.id === victim.id), 60_000, serverWait({ what: `the killed leader ${victim.id} removed` }));
    await waitFor(() => leaderNow()?.identity !== undefined && leaderNow()!.identity !== before.identity, 60_000, serverWait({ what: 'a new leader' }));
    const removal = seen.slice(from).find((e) => e.type === 'removed' && e.member.id === victim.id)!;
    expect(removal.reason).toBe('expired');
    expect(removal.member.payload).toEqual(victim.payload);
    expect(leaderNow()!.fencingToken!).toBeGreaterThan(before.fencingToken!);
    // the kubelet restarted the container: a new process, a new member
    await waitFor(() => current('master').length === 3, 60_000, serverWait({ what: 'three masters again' }));
  }, 120_000);

  it('a leader pod deleted (SIGTERM, grace period): its member withdrawn and leadership handed over well within the lease', async () => {
    await waitFor(() => leaderNow()?.identity !== undefined, 60_000, serverWait({ what: 'a leader' }));
    const before = leaderNow()!;
    const victim = members.get(before.identity!)!;
    const from = seen.length;
    const deletedAt = Date.now();
    await admin.core.deleteNamespacedPod({ name: (victim.payload as { pod: string }).pod, namespace });
    await waitFor(() => seen.slice(from).some((e) => e.type === 'removed' && e.member.id === victim.id), 30_000, serverWait({ what: `${victim.id} withdrawn` }));
    await waitFor(() => leaderNow()?.identity !== undefined && leaderNow()!.identity !== before.identity, 30_000, serverWait({ what: 'the next leader' }));
    expect(seen.slice(from).find((e) => e.type === 'removed' && e.member.id === victim.id)!.reason).toBe('deleted');
    // handed over, not expired: the next leader took office before the old lease (15 s) could run out
    expect(leaderNow()!.at - deletedAt).toBeLessThan(15_000);
    await waitFor(() => current('master').length === 3, 60_000, serverWait({ what: 'three masters again' }));
  }, 120_000);

  it('a frozen worker whose pod is deleted: its Lease is garbage-collected with the pod, before its member lease could expire', async () => {
    const victim = current('worker')[0]!;
    const pod = await podOf(victim);
    const from = seen.length;
    signalContainer(pod, 'main', 'SIGSTOP');
    const frozenAt = Date.now();
    await admin.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace, gracePeriodSeconds: 1 });
    await waitFor(() => seen.slice(from).some((e) => e.type === 'removed' && e.member.id === victim.id), 30_000, serverWait({ what: `${victim.id} removed with its pod` }));
    const removal = seen.slice(from).find((e) => e.type === 'removed' && e.member.id === victim.id)!;
    expect(removal.reason).toBe('deleted');
    expect(removal.at - frozenAt).toBeLessThan(20_000);
    await waitFor(() => current('worker').length === 4, 60_000, serverWait({ what: 'four workers again' }));
  }, 120_000);
});
