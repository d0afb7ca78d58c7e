import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { createRegistry, ErrorCode, type MemberEvent, type Registry } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { AuditLog, KWOK_POD_ANNOTATIONS, proxiedKubeconfig, restartKubeControllers, startServer, stopServer, type AuditEvent, type AuditWindow } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIVENESS_ANNOTATION, POD_UID_LABEL } from '../src/codec.js';
import { objectName, registryPlugin, serveReadinessProbe } from '../src/index.js';
import { Admin } from './admin.js';
import { DrivenNode } from './driven-node.js';
import { kubeEnv } from './kube-env.js';

const admin = new Admin();
const CLUSTER = 'podlive';
/** A member's own deadline in the node-lost case: below the rule's 40000 (the node controller's 50 s grace less its 10 s). */
const POD_RENEW_DEADLINE_MS = 30_000;
let namespace: string;
const opened: Registry[] = [];

/** A registry in pod mode that takes the pod `podUid` for its own (the test process stands in for the pod's container). */
async function open(identity: string, podUid?: string, kubernetes: Record<string, unknown> = {}, member: Record<string, unknown> = {}): Promise<Registry> {
  const registry = await createRegistry(
    { type: 'kubernetes', cluster: CLUSTER, identity, requestTimeoutMs: 1500, member: { liveness: 'pod', heartbeatIntervalMs: 1000, leaseDurationMs: 4000, ...member }, kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace, ...(podUid ? { podUid } : {}), ...kubernetes } },
    { plugins: [registryPlugin as never] },
  );
  opened.push(registry);
  return registry;
}

/** A kwok pod with label `app=<app>`; `annotations` tell kwok how its container behaves. Resolves with its uid. */
async function pod(name: string, app: string, annotations: Record<string, string> = {}): Promise<string> {
  const created = await admin.core.createNamespacedPod({ namespace, body: { metadata: { name, labels: { app }, annotations }, spec: { containers: [{ name: 'main', image: 'registry.invalid/worker:1' }] } } });
  return created.metadata!.uid!;
}

/** Member events of `role` as `registry` reports them, and a way to wait for the n-th. */
function log(registry: Registry, role: string) {
  const events: MemberEvent[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  registry.watchMembers(role, (e) => {
    events.push(e);
    for (const w of waiters.filter((w) => events.length >= w.n)) w.resolve();
  });
  return {
    events,
    /** Resolves once `n` events arrived; fails after `timeoutMs`. */
    count: (n: number, timeoutMs = 60_000) =>
      new Promise<void>((resolve, reject) => {
        if (events.length >= n) return resolve();
        const timer = setTimeout(() => reject(new Error(`${events.length} of ${n} member events after ${timeoutMs} ms: ${JSON.stringify(events.map((e) => e.type))}`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
      }),
  };
}

beforeAll(async () => {
  namespace = await admin.namespace('podlive', { forPods: true });
  // The shipped shape: a headless Service per role, selecting the role's pods.
  await admin.core.createNamespacedService({ namespace, body: { metadata: { name: 'rollcall-worker' }, spec: { clusterIP: 'None', selector: { app: 'worker' }, ports: [{ name: 'probe', port: 8080 }] } } });
});

afterAll(async () => {
  await Promise.all(opened.map((r) => r.close().catch(() => {})));
});

describe('registry.member.liveness=pod on Kubernetes: readiness from the role Service\'s EndpointSlices', () => {
  it('a member is written once; its container exiting (pod not Ready) removes it, reason expired, with its last data', async () => {
    // Ready once Running; its container exits 8 s later (kwok's stage turns Ready false).
    const uid = await pod('worker-exit', 'worker', { [KWOK_POD_ANNOTATIONS.exitCode]: '1', [KWOK_POD_ANNOTATIONS.runFor]: '8s' });
    const reader = await open('reader');
    const seen = log(reader, 'worker');
    const member = await open('worker-exit', uid);
    await member.announce({ role: 'worker', id: 'w-exit', payload: { slot: 1 } });
    await seen.count(1);
    expect(seen.events[0]).toMatchObject({ type: 'added', member: { id: 'w-exit' } });
    const name = objectName(CLUSTER, 'member/worker/w-exit');
    const announced = await admin.coordination.readNamespacedLease({ name, namespace });
    expect(JSON.parse(announced.metadata!.annotations![LIVENESS_ANNOTATION]!)).toEqual({ mode: 'pod', podUid: uid });
    await seen.count(2);
    expect(seen.events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w-exit', payload: { slot: 1 } } });
    // Seconds of a 1 s heartbeat interval went by: the record was never renewed.
    const after = await admin.coordination.readNamespacedLease({ name, namespace });
    expect(after.metadata!.resourceVersion).toBe(announced.metadata!.resourceVersion);
    expect(await reader.members('worker')).toEqual([]);
  });

  it('the pod deleted removes its member; a reader opened later never sees it (no phantom)', async () => {
    const uid = await pod('worker-del', 'worker');
    const reader = await open('reader-del');
    const seen = log(reader, 'worker');
    const member = await open('worker-del', uid);
    await member.announce({ role: 'worker', id: 'w-del' });
    await seen.count(1);
    await admin.core.deleteNamespacedPod({ name: 'worker-del', namespace, gracePeriodSeconds: 0 });
    await seen.count(2);
    expect(seen.events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w-del' } });
    const late = await open('reader-late');
    expect((await late.members('worker')).map((m) => m.id)).not.toContain('w-del');
  });

  it('its node lost (no heartbeats, the member cut off with it): the member, with its own podRenewDeadlineMs, is lost (renew-deadline) before the node lifecycle controller marks its pods not Ready and the member is removed, reason expired, with its last data; no phantom after', async () => {
    // No kubelet and no kwok run this node: the test sends its heartbeats, then stops them.
    const node = await DrivenNode.start(admin, `driven-${namespace}`);
    // The process runs on that node: a partition of the node cuts it off from the API server too.
    const { proxy, kubeconfig } = await proxiedKubeconfig(kubeEnv().kubeconfig);
    try {
      const uid = await node.runPod(namespace, 'worker-node', { app: 'worker' }, '10.203.0.2');
      const reader = await open('reader-node');
      const seen = log(reader, 'worker');
      const member = await open('worker-node', uid, { kubeconfig }, { podRenewDeadlineMs: POD_RENEW_DEADLINE_MS });
      const announced = await member.announce({ role: 'worker', id: 'w-node', payload: { slot: 2 } });
      let lost: { reason: string; at: number; removedBefore: boolean } | undefined;
      announced.on('lost', ({ reason }) => (lost = { reason, at: performance.now(), removedBefore: seen.events.length > 2 }));
      await seen.count(1);
      await announced.update({ slot: 3 });
      await seen.count(2);
      const lostAt = node.loseNode();
      await proxy.cut('reset');
      // kube-controller-manager's --node-monitor-grace-period (its default, 50 s), then its --node-monitor-period (5 s).
      await seen.count(3, 90_000);
      const removedAt = performance.now();
      expect(seen.events[2]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w-node', payload: { slot: 3 } } });
      // The member knew first, by its own clock: lost at its last good read + the deadline, within the 40 s the rule leaves.
      expect(lost).toMatchObject({ reason: 'renew-deadline', removedBefore: false });
      expect(lost!.at).toBeLessThan(removedAt);
      expect(lost!.at - lostAt).toBeLessThan(40_000);
      expect(announced.alive).toBe(false);
      expect(announced.signal.aborted).toBe(true);
      console.log(`[node lost] member lost ${((lost!.at - lostAt) / 1000).toFixed(1)} s after the node's last heartbeat, removed at the reader ${((removedAt - lostAt) / 1000).toFixed(1)} s after it`);
      // The controller's doing: the node is Unknown and the pod not Ready (a member removed while its node still beat fails here)...
      const [nodeNow, podNow] = await Promise.all([admin.core.readNode({ name: node.name }), admin.core.readNamespacedPod({ name: 'worker-node', namespace })]);
      expect(nodeNow.status!.conditions!.find((c) => c.type === 'Ready')!.status).toBe('Unknown');
      expect(podNow.status!.conditions!.find((c) => c.type === 'Ready')!.status).toBe('False');
      // ...and no sooner than the grace period after the last heartbeat (at most 2 s before the stop): the heartbeats kept it Ready.
      expect(removedAt - lostAt).toBeGreaterThanOrEqual(50_000 - 2000);
      const late = await open('reader-node-late');
      expect((await late.members('worker')).map((m) => m.id)).not.toContain('w-node');
      expect(seen.events.map((e) => `${e.type} ${e.member.id}`)).toEqual(['added w-node', 'updated w-node', 'removed w-node']);
    } finally {
      await admin.core.deleteNamespacedPod({ name: 'worker-node', namespace, gracePeriodSeconds: 0 }).catch(() => {});
      await node.remove();
      await proxy.close();
    }
  }, 150_000);

  it('a pod turned not Ready and Ready again (its probe failing, then passing): its member removed (expired), then added again — once each', async () => {
    const uid = await pod('worker-flip', 'worker');
    const reader = await open('reader-flip');
    const seen = log(reader, 'worker');
    const member = await open('worker-flip', uid);
    await member.announce({ role: 'worker', id: 'w-flip', payload: { n: 7 } });
    await seen.count(1);
    const setReady = (value: 'true' | 'false') =>
      admin.core.patchNamespacedPod({ name: 'worker-flip', namespace, body: { metadata: { annotations: { [KWOK_POD_ANNOTATIONS.ready]: value } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await setReady('false');
    await seen.count(2);
    await setReady('true');
    await seen.count(3);
    expect(seen.events.map((e) => `${e.type} ${e.member.id}${e.type === 'removed' ? ` ${e.reason}` : ''}`)).toEqual(['added w-flip', 'removed w-flip expired', 'added w-flip']);
    expect(seen.events[1]!.member.payload).toEqual({ n: 7 });
  });

  it('an announce costs the same however many members the role has: it waits for its pod through the role\'s one readiness watch, and finds an earlier container\'s records by its pod\'s label, not by listing the role', async () => {
    const uid = await pod('worker-cost', 'worker');
    // The role has members besides this pod's: off-cluster ones, which no request of the announce should read.
    const others = await open('cost-others');
    for (let i = 0; i < 5; i++) await others.announce({ role: 'worker', id: `w-other-${i}` });
    const earlier = await open('cost-earlier', uid); // an earlier container of the pod, as the sweep sees it
    await earlier.announce({ role: 'worker', id: 'w-earlier' });
    const identity = `cost-${process.pid}-${Date.now().toString(36)}`;
    const member = await open(identity, uid);
    const earlierLease = objectName(CLUSTER, 'member/worker/w-earlier');
    const audit = new AuditLog(kubeEnv().auditLogPath, async (name) => void (await admin.coordination.readNamespacedLease({ name, namespace }).catch(() => undefined)));
    const byMember = async (window: AuditWindow) => (await audit.requests(window)).filter((e) => (e as AuditEvent & { userAgent?: string }).userAgent?.includes(`(${identity})`));
    const reading = audit.open();
    await member.members('worker'); // it reads its own role, as most members do: the role's readiness watch is open
    // Its watches start after their lists: wait until both are in, so the window holds the announce's requests alone.
    await waitFor(async () => (await byMember(reading)).filter((e) => e.verb === 'watch').length === 2, 30_000, 'the member\'s two watches of its role');
    const window = audit.open();
    await member.announce({ role: 'worker', id: 'w-cost' });
    const requests = (await byMember(window)).map((e) => {
      const query = new URL(e.requestURI!, 'https://apiserver').searchParams;
      return `${e.verb} ${e.objectRef?.resource}${query.has('labelSelector') ? ` ${query.get('labelSelector')}` : ''}${e.objectRef?.name === earlierLease ? ' (earlier)' : ''}`;
    });
    // No list or watch of the slices (the reader's watch answers), one list of this pod's Leases, the earlier container's
    // record deleted, this member's created: three requests, the same at 10 members or 10,000.
    expect(requests.sort()).toEqual(
      [`list leases rollcall.dev/cluster=${CLUSTER},rollcall.dev/kind=member,rollcall.dev/role=worker,rollcall.dev/pod-uid=${uid}`, 'delete leases (earlier)', 'create leases'].sort(),
    );
    await expect(admin.coordination.readNamespacedLease({ name: earlierLease, namespace })).rejects.toMatchObject({ code: 404 });
    const lease = await admin.coordination.readNamespacedLease({ name: objectName(CLUSTER, 'member/worker/w-cost'), namespace });
    expect(lease.metadata!.labels![POD_UID_LABEL]).toBe(uid);
  });

  it('announce from a pod outside the role\'s Service fails INVALID_CONFIG naming the Service, and writes nothing', async () => {
    const uid = await pod('stray', 'not-a-worker');
    const member = await open('stray', uid, { memberServiceWaitMs: 3000 });
    await expect(member.announce({ role: 'worker', id: 'stray' })).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, message: expect.stringContaining('Service rollcall-worker') });
    await expect(admin.coordination.readNamespacedLease({ name: objectName(CLUSTER, 'member/worker/stray'), namespace })).rejects.toMatchObject({ code: 404 });
  });

  it('a member outside a pod keeps heartbeats', async () => {
    const member = await open('off-cluster');
    await member.announce({ role: 'worker', id: 'w-off' });
    const lease = await admin.coordination.readNamespacedLease({ name: objectName(CLUSTER, 'member/worker/w-off'), namespace });
    expect(JSON.parse(lease.metadata!.annotations![LIVENESS_ANNOTATION]!)).toEqual({ mode: 'heartbeat' });
  });

  it('the readiness probe stays 200 through a 30 s API server outage (suspended, then lost), so the member is never removed, nor lost by its own deadline (podRenewDeadlineMs 39 s); 503 once the registry closes', async () => {
    const uid = await pod('worker-probe', 'worker');
    const reader = await open('reader-probe');
    const seen = log(reader, 'worker');
    // With its own deadline on, at its bound below the node controller's grace period: the outage still loses nobody.
    const member = await open('worker-probe', uid, {}, { podRenewDeadlineMs: 39_000 });
    const probe = await serveReadinessProbe(member, { port: 0, host: '127.0.0.1' });
    const status = async () => (await fetch(`http://127.0.0.1:${probe.port}/readyz`)).status;
    try {
      const handle = await member.announce({ role: 'worker', id: 'w-probe' });
      const lost: string[] = [];
      handle.on('lost', (e) => lost.push(e.reason));
      // It reads the role too, as most members do: its watch is what tells it the API server is away.
      await member.members('worker');
      await waitFor(() => seen.events.some((e) => e.member.id === 'w-probe'), 30_000, 'the reader to see the member');
      const before = seen.events.length;
      expect(await status()).toBe(200);
      await stopServer('kube-apiserver');
      const statuses: number[] = [];
      const states = new Set<string>();
      try {
        // The outage itself: the probe asked once a second, as a kubelet with periodSeconds: 1 would.
        const end = performance.now() + 30_000;
        while (performance.now() < end) {
          statuses.push(await status());
          states.add(member.state);
          await new Promise((r) => setTimeout(r, 1000));
        }
      } finally {
        await startServer('kube-apiserver');
        // Their informers backed off through the outage: later files need pods scheduled and EndpointSlices kept at once.
        await restartKubeControllers();
      }
      expect([...states]).toContain('lost'); // the grace mattered: the connection was lost, not merely suspended
      expect(statuses.length).toBeGreaterThanOrEqual(25);
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      await waitFor(() => member.state === 'connected', 60_000, 'the member registry to reconnect');
      await waitFor(async () => (await reader.members('worker')).some((m) => m.id === 'w-probe'), 60_000, 'the reader to list the member');
      expect(seen.events.slice(before).filter((e) => e.member.id === 'w-probe')).toEqual([]); // neither removed nor added again
      expect(lost).toEqual([]);
      expect(handle.alive).toBe(true);
      const closing = member.close();
      expect(await status()).toBe(503);
      await closing;
    } finally {
      await probe.close();
    }
  }, 150_000);
});
