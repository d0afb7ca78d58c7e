import { readFileSync } from 'node:fs';
import { createRegistry, ErrorCode, type MemberEvent, type Registry } from '@rollcall/core';
import { compactServer, kubeconfigVia, proxiedKubeconfig } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLUSTER_LABEL, KIND_LABEL, createKubernetesStore, objectName, PAYLOAD_ANNOTATION, registryPlugin } from '../src/index.js';
import { Admin } from './admin.js';
import { kubeEnv, registryEvent } from './kube-env.js';
import type { TcpProxy } from '@rollcall/tools/testenv';

const plugins = [registryPlugin as never];
/** How long a change may take to reach another client through the watch, milliseconds. */
const BOUND_MS = 10_000;
const admin = new Admin();
const timing = { member: { heartbeatIntervalMs: 500, leaseDurationMs: 3000 }, election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 400 } };
let namespace: string;
const opened: Registry[] = [];
const proxies: TcpProxy[] = [];

async function open(cluster: string, identity: string, extra: Record<string, unknown> = {}, kubeconfig = kubeEnv().kubeconfig): Promise<Registry> {
  const registry = await createRegistry({ type: 'kubernetes', cluster, identity, ...timing, kubernetes: { kubeconfig, namespace, ...extra } }, { plugins });
  opened.push(registry);
  return registry;
}

beforeAll(async () => {
  namespace = await admin.namespace('backend');
});

afterAll(async () => {
  await Promise.all(opened.map((r) => r.close()));
  await Promise.all(proxies.map((p) => p.close()));
});

describe('the Kubernetes backend', () => {
  it('names itself to the API server: User-Agent rollcall/<version> (<identity>), in the audit log', async () => {
    const identity = `ua-${process.pid}-${Date.now().toString(36)}`;
    const registry = await open('user-agent', identity);
    await registry.announce({ role: 'worker', id: 'w1' });
    const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
    // The audit log is written synchronously: the create is in it once announce has returned.
    const agents = readFileSync(kubeEnv().auditLogPath, 'utf8')
      .split('\n')
      .filter((line) => line.includes(`"namespace":"${namespace}"`) && line.includes('"verb":"create"') && line.includes('"resource":"leases"'))
      .map((line) => (JSON.parse(line) as { userAgent?: string }).userAgent);
    expect(agents).toContain(`rollcall/${version} (${identity})`);
  });

  it('keeps every record as a labelled Lease that kubectl can list by cluster', async () => {
    const registry = await open('listing', 'm1');
    await registry.announce({ role: 'worker', id: 'w1', payload: { cpu: 0.5 } });
    await registry.campaign('scheduler').whenElected(AbortSignal.timeout(10_000));
    const leases = await admin.leases(namespace, `${CLUSTER_LABEL}=listing`);
    const byKind = Object.fromEntries(leases.map((l) => [l.metadata!.labels![KIND_LABEL], l]));
    expect(Object.keys(byKind).sort()).toEqual(['election', 'member']);
    expect(byKind.election!.metadata!.name).toBe('listing-election-scheduler');
    expect(byKind.election!.spec!.holderIdentity).toBe('m1');
    expect(byKind.member!.spec!.holderIdentity).toBe('w1');
    expect(JSON.parse(byKind.member!.metadata!.annotations![PAYLOAD_ANNOTATION]!)).toEqual({ cpu: 0.5 });
  });

  it('a Lease edited by hand into garbage is reported, and the watch goes on', async () => {
    const registry = await open('garbage', 'g1');
    const peer = await open('garbage', 'g2');
    await peer.members('worker'); // the peer reads workers
    const added = registryEvent(peer, 'memberAdded', BOUND_MS, (e) => e.member.id === 'victim');
    await registry.announce({ role: 'worker', id: 'victim', payload: { n: 1 } });
    await added;
    const corrupt = registryEvent(peer, 'corruptRecord', BOUND_MS, () => true);
    const removed = registryEvent(peer, 'memberRemoved', BOUND_MS, (e) => e.member.id === 'victim');
    await admin.coordination.patchNamespacedLease({ name: objectName('garbage', 'member/worker/victim'), namespace, body: [{ op: 'replace', path: `/metadata/annotations/${PAYLOAD_ANNOTATION.replace('/', '~1')}`, value: '{not json' }] });
    expect((await corrupt).error.code).toBe(ErrorCode.CORRUPT_RECORD);
    expect((await removed).reason).toBe('corrupt');
    // The watch still works: a new member shows up.
    const after = registryEvent(peer, 'memberAdded', BOUND_MS, (e) => e.member.id === 'after');
    await registry.announce({ role: 'worker', id: 'after', payload: {} });
    await after;
  });

  it('a shadow Lease (the same key annotation and labels under another name) is logged once and ignored: no fake member or leader, and its delete removes nobody', async () => {
    const warnings: string[] = [];
    const logger = { debug() {}, info() {}, warn: (_: unknown, message?: string) => void warnings.push(message ?? ''), error() {} };
    const registry = await open('shadow', 's1');
    const peer = await createRegistry({ type: 'kubernetes', cluster: 'shadow', identity: 's2', ...timing, kubernetes: { kubeconfig: kubeEnv().kubeconfig, namespace } }, { plugins, logger });
    opened.push(peer);
    const token = await registry.campaign('scheduler').whenElected(AbortSignal.timeout(BOUND_MS));
    const events: string[] = [];
    peer.watchMembers('worker', (e) => events.push(`${e.type} ${e.member.id}`));
    const added = registryEvent(peer, 'memberAdded', BOUND_MS, (e) => e.member.id === 'victim');
    await registry.announce({ role: 'worker', id: 'victim', payload: { n: 1 } });
    await added;
    const real = await admin.leases(namespace, `${CLUSTER_LABEL}=shadow`);
    const shadowOf = (name: string, holder: string, extra: Record<string, unknown> = {}) => {
      const original = real.find((l) => l.metadata!.name === name)!;
      const { labels, annotations } = original.metadata!;
      return { metadata: { name: `${name}-shadow`, labels, annotations: { ...annotations, [PAYLOAD_ANNOTATION]: '{"fake":true}' } }, spec: { ...original.spec, holderIdentity: holder, renewTime: new Date().toISOString().replace('Z', '000Z'), ...extra } };
    };
    const memberName = objectName('shadow', 'member/worker/victim');
    await admin.coordination.createNamespacedLease({ namespace, body: shadowOf(memberName, 'mallory') as never });
    await admin.coordination.createNamespacedLease({ namespace, body: shadowOf('shadow-election-scheduler', 'mallory', { leaseTransitions: 99 }) as never });
    // A member announced after the shadows reaches the peer after them (one watch of Leases, in order).
    const sentinel = registryEvent(peer, 'memberAdded', BOUND_MS, (e) => e.member.id === 'after');
    await registry.announce({ role: 'worker', id: 'after', payload: {} });
    await sentinel;
    expect((await peer.members('worker')).map((m) => [m.id, m.payload])).toEqual(expect.arrayContaining([['victim', { n: 1 }]]));
    expect((await peer.members('worker')).some((m) => JSON.stringify(m.payload).includes('fake'))).toBe(false);
    const election = (await peer.elections()).find((e) => e.name === 'scheduler')!;
    expect(election.holder).toMatchObject({ identity: 's1', fencingToken: token });
    expect(warnings.filter((w) => w.includes(`${memberName}-shadow`))).toEqual([
      `[rollcall] [kubernetes] ignored leases.coordination.k8s.io ${memberName}-shadow: it claims the key member/worker/victim, which is the object leases.coordination.k8s.io ${memberName} (a shadow object: someone else created it)`,
    ]);
    await admin.coordination.deleteNamespacedLease({ name: `${memberName}-shadow`, namespace });
    const sentinel2 = registryEvent(peer, 'memberAdded', BOUND_MS, (e) => e.member.id === 'after-delete');
    await registry.announce({ role: 'worker', id: 'after-delete', payload: {} });
    await sentinel2;
    expect(events).toEqual(['added victim', 'added after', 'added after-delete']);
    expect((await peer.members('worker')).map((m) => m.id)).toContain('victim');
  });

  it('a member Lease deleted by hand is removed for peers and announced again by its next heartbeat', async () => {
    const registry = await open('handdelete', 'h1');
    const peer = await open('handdelete', 'h2');
    await peer.members('worker'); // the peer reads workers
    const added = registryEvent(peer, 'memberAdded', BOUND_MS, (e) => e.member.id === 'w');
    await registry.announce({ role: 'worker', id: 'w', payload: { n: 1 } });
    await added;
    const events: MemberEvent['type'][] = [];
    peer.watchMembers('worker', (e) => events.push(e.type));
    events.length = 0;
    const back = registryEvent(peer, 'memberAdded', BOUND_MS, (e) => e.member.id === 'w');
    await admin.coordination.deleteNamespacedLease({ name: objectName('handdelete', 'member/worker/w'), namespace });
    await back;
    expect(events).toEqual(['removed', 'added']);
  });

  it('an election Lease deleted by hand: its leader steps down, and no follower leads before the lease it last saw has run out', async () => {
    const a = await open('electiondelete', 'a');
    const b = await open('electiondelete', 'b');
    const la = a.campaign('scheduler');
    const first = await la.whenElected(AbortSignal.timeout(10_000));
    const lb = b.campaign('scheduler');
    const events: string[] = [];
    la.on('lost', (e) => events.push(`a lost ${e.reason}`));
    la.on('elected', () => events.push('a elected'));
    lb.on('elected', () => events.push('b elected'));
    const name = objectName('electiondelete', 'election/scheduler');
    const deletedAt = performance.now();
    const lost = new Promise<void>((resolve) => la.once('lost', () => resolve()));
    await admin.coordination.deleteNamespacedLease({ name, namespace });
    await lost;
    // The renew is a PUT naming the deleted object's uid, so it cannot re-create it: the leader learns and steps down.
    const next = await Promise.race([la.whenElected(AbortSignal.timeout(15_000)), lb.whenElected(AbortSignal.timeout(15_000))]);
    expect(events[0]).toBe('a lost deleted');
    expect(events.slice(1)).toHaveLength(1);
    // b saw the last renew just before the delete; it may not lead before that lease is out.
    if (events[1] === 'b elected') expect(performance.now() - deletedAt).toBeGreaterThan(timing.election.leaseDurationMs - timing.election.retryPeriodMs - 100);
    expect(next).toBeGreaterThan(first);
  });

  it('fails at connect with a clear error when the namespace does not exist', async () => {
    const err = await createKubernetesStore({ cluster: 'x', kubeconfig: kubeEnv().kubeconfig, namespace: 'no-such-namespace' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.kubernetes.namespace' });
    expect((err as Error).message).toContain('no-such-namespace does not exist');
  });

  it('fails at connect within the timeout when the API server is unreachable', async () => {
    const kubeconfig = kubeconfigVia('https://127.0.0.1:1');
    const started = performance.now();
    await expect(createRegistry({ type: 'kubernetes', requestTimeoutMs: 2000, kubernetes: { kubeconfig, namespace } }, { plugins })).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('rejects a bad kubeconfig, context and option with INVALID_CONFIG naming the key', async () => {
    await expect(createRegistry({ type: 'kubernetes', kubernetes: { kubeconfig: '/nonexistent/kubeconfig' } }, { plugins })).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.kubernetes.kubeconfig' });
    await expect(createRegistry({ type: 'kubernetes', kubernetes: { kubeconfig: kubeEnv().kubeconfig, context: 'nope' } }, { plugins })).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.kubernetes.context' });
    // @ts-expect-error the section's type has only lease and configmap; a JavaScript or JSON configuration meets the run-time check
    await expect(createRegistry({ type: 'kubernetes', kubernetes: { lock: 'endpoints' } }, { plugins })).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.kubernetes.lock' });
    await expect(createRegistry({ type: 'kubernetes', kubernetes: { namespace: 'Bad_NS' } }, { plugins })).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.kubernetes.namespace' });
  });

  it('a watch from a resourceVersion the server no longer keeps gets REVISION_TOO_OLD (410 Gone)', async () => {
    const store = await createKubernetesStore({ cluster: 'gone', kubeconfig: kubeEnv().kubeconfig, namespace });
    const { revision } = await store.list('');
    // Compacted, and kube-apiserver's watch cache relisted past it: gone on a server of any age.
    await compactServer('kubernetes');
    const error = await new Promise<{ code: string }>((resolve) => store.watch('', revision, { event: () => {}, error: (e) => resolve(e) }));
    expect(error.code).toBe(ErrorCode.REVISION_TOO_OLD);
    await store.close();
  });

  it('restarts a watch stream that goes silent, so the view does not freeze', async () => {
    const { proxy, kubeconfig } = await proxiedKubeconfig();
    proxies.push(proxy);
    const watcher = await open('silence', 's1', { watchSilenceTimeoutMs: 2000 }, kubeconfig);
    const writer = await open('silence', 's2');
    await watcher.members('worker'); // its watch of workers is open before the stall
    proxy.cut('stall', { scope: 'open' }); // the stream stays open but nothing more comes through; new connections work
    const late = registryEvent(watcher, 'memberAdded', 15_000, (e) => e.member.id === 'late');
    await writer.announce({ role: 'worker', id: 'late', payload: {} });
    await late;
  });

  it('with lock=configmap keeps elections in the leader annotation of a ConfigMap', async () => {
    const a = await open('cmlock', 'a', { lock: 'configmap' });
    const b = await open('cmlock', 'b', { lock: 'configmap' });
    const la = a.campaign('scheduler');
    await la.whenElected(AbortSignal.timeout(10_000));
    const lb = b.campaign('scheduler');
    const cm = await admin.core.readNamespacedConfigMap({ name: objectName('cmlock', 'election/scheduler'), namespace });
    const record = JSON.parse(cm.metadata!.annotations!['control-plane.alpha.kubernetes.io/leader']!) as Record<string, unknown>;
    expect(record).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 3, leaderTransitions: la.fencingToken });
    await la.resign();
    await lb.whenElected(AbortSignal.timeout(5_000));
    const lock = await a.lock('jobs', { timeoutMs: 10_000 });
    expect((await admin.core.readNamespacedConfigMap({ name: objectName('cmlock', 'lock/jobs'), namespace })).metadata!.annotations!['control-plane.alpha.kubernetes.io/leader']).toContain(`"holderIdentity":"a.`);
    await lock.release();
  });
});
