import { createRegistry, type Logger, type MemberEvent, type Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { formatMicroTime, memberKey } from '@rollcall/core/spi';
import { requestAs, serviceAccountKubeconfig, type RawAnswer } from '@rollcall/tools/testenv';
import { waitFor } from '@rollcall/conformance';
import { PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaseAdmissionPolicies, objectName, registryPlugin } from '../src/index.js';
import { Admin } from './admin.js';
import { reaperRoundTrip } from './reaper-paths.js';

/**
 * The shipped Lease admission policies on the API server, as each account,
 * with raw requests: every way around the Roles is refused with the policy's
 * message, and every path the library takes still works. The policies are
 * generated under names of this file's own and bound by a label only this
 * file's namespace carries, so other suites on the same API server are not
 * judged by them.
 */

const plugins = [registryPlugin as never];
const admin = new Admin();
const silent: Logger = Object.fromEntries(['debug', 'info', 'warn', 'error'].map((l) => [l, () => undefined])) as unknown as Logger;
const CLUSTER = 'vap';
let namespace: string;
let policies: Record<string, unknown>[];
const opened: Registry[] = [];
const configs: Record<'member' | 'coordinator', string> = { member: '', coordinator: '' };

/** One request to the API server as `as`, no library in between. */
const raw = (as: 'member' | 'coordinator', method: string, path: string, body?: unknown, contentType?: string) => requestAs(configs[as], method, path, body, contentType);

const leases = () => `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
const mergePatch = (as: 'member' | 'coordinator', name: string, patch: unknown) => raw(as, 'PATCH', `${leases()}/${name}`, patch, 'application/merge-patch+json');

/** The messages of the generated rules, by rule: the test asserts the one it means. */
const MEMBER_NEW = 'rollcall-member may write only Rollcall member or heartbeat Leases';
const MEMBER_OLD = 'rollcall-member may change or delete only Leases that already are Rollcall member or heartbeat Leases';
const MEMBER_HOLDER = 'rollcall-member may change the spec.holderIdentity of a member or heartbeat Lease only to clear it';
const HOLDER_NEW = 'rollcall-coordinator and rollcall-pod-runner may write only Rollcall record Leases';
const HOLDER_OLD = 'rollcall-coordinator and rollcall-pod-runner may change or delete only Leases that already are Rollcall record Leases';
const KEEPS = 'a Rollcall Lease keeps its rollcall.dev/kind, rollcall.dev/cluster and rollcall.dev/key';

/** Refused by an admission policy, not by RBAC (whose cache may not have the new binding yet). */
const byPolicy = (answer: RawAnswer) => answer.status === 403 && (answer.body.message ?? '').includes('ValidatingAdmissionPolicy');

function refused(answer: RawAnswer, message: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(403);
  expect(answer.body.message).toContain('ValidatingAdmissionPolicy');
  expect(answer.body.message).toContain(message);
}

async function open(as: 'member' | 'coordinator', identity: string, reaper = false): Promise<Registry> {
  const member = reaper ? { member: { liveness: 'reaper' as const, heartbeatIntervalMs: 500, leaseDurationMs: 2000 } } : {};
  const registry = await createRegistry({ type: 'kubernetes', cluster: reaper ? `${CLUSTER}-reaper` : CLUSTER, identity, ...member, kubernetes: { kubeconfig: configs[as], namespace } }, { plugins, logger: silent });
  opened.push(registry);
  return registry;
}

/** A Lease nobody labelled as Rollcall's (a controller's leader Lease), made by the admin. */
async function foreignLease(name: string): Promise<void> {
  await admin.coordination.createNamespacedLease({ namespace, body: { metadata: { name }, spec: { holderIdentity: 'kube-controller', leaseDurationSeconds: 15 } } });
}

async function holderOf(name: string): Promise<string | undefined> {
  return (await admin.coordination.readNamespacedLease({ name, namespace })).spec?.holderIdentity ?? undefined;
}

beforeAll(async () => {
  namespace = await admin.namespace('vap');
  await admin.applyManifest('rollcall-coordinator.yaml', namespace);
  await admin.applyManifest('rollcall-member.yaml', namespace);
  configs.member = await serviceAccountKubeconfig(namespace, 'rollcall-member');
  configs.coordinator = await serviceAccountKubeconfig(namespace, 'rollcall-coordinator');
  const label = 'rollcall.dev/admission-test';
  policies = leaseAdmissionPolicies({ namePrefix: `rollcall-${namespace}`, namespaceSelector: { matchLabels: { [label]: namespace } } });
  for (const doc of policies) await admin.objects.create(doc as KubernetesObject);
  await admin.core.patchNamespace({ name: namespace, body: { metadata: { labels: { [label]: namespace } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  // A policy takes effect once the API server has compiled it and its binding: a dry-run write each must refuse, asked until it does.
  const shadow = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { generateName: 'probe-' }, spec: {} };
  for (const as of ['member', 'coordinator'] as const) {
    await waitFor(async () => byPolicy(await raw(as, 'POST', `${leases()}?dryRun=All`, shadow)) || undefined, 30_000, `the ${as} policy to take effect`);
    // And a Rollcall record of the account's own kind passes both RBAC (once its cache has the binding) and the policy.
    const kind = as === 'member' ? 'member' : 'election';
    const record = { ...shadow, metadata: { generateName: 'probe-', labels: { 'rollcall.dev/cluster': CLUSTER, 'rollcall.dev/kind': kind }, annotations: { 'rollcall.dev/key': `${kind}/probe` } } };
    await waitFor(async () => (await raw(as, 'POST', `${leases()}?dryRun=All`, record)).status === 201 || undefined, 30_000, `the ${as} account to be allowed its own records`);
  }
}, 60_000);

afterAll(async () => {
  await Promise.all(opened.map((r) => r.close()));
  for (const doc of (policies ?? []).slice().reverse()) await admin.objects.delete(doc as KubernetesObject).catch(() => undefined);
});

describe('the Lease admission policies, as each account with raw requests', () => {
  let election: string;

  beforeAll(async () => {
    const leader = await open('coordinator', 'coordinator-1');
    await leader.campaign('scheduler').whenElected(AbortSignal.timeout(10_000));
    election = objectName(CLUSTER, 'election/scheduler');
    expect(await holderOf(election)).toBe('coordinator-1');
    await foreignLease('kube-controller-leader');
  });

  it('the member account cannot take an election by a merge PATCH of spec.holderIdentity', async () => {
    refused(await mergePatch('member', election, { spec: { holderIdentity: 'worker-evil' } }), MEMBER_OLD);
    expect(await holderOf(election)).toBe('coordinator-1');
  });

  it('the member account cannot DELETE an election (and reset its fencing history)', async () => {
    refused(await raw('member', 'DELETE', `${leases()}/${election}`), MEMBER_OLD);
    expect(await holderOf(election)).toBe('coordinator-1');
  });

  it('the member account cannot launder an election by relabelling it a member, nor move its key', async () => {
    refused(await mergePatch('member', election, { metadata: { labels: { 'rollcall.dev/kind': 'member' } } }), MEMBER_OLD);
    refused(await mergePatch('member', election, { metadata: { labels: { 'rollcall.dev/kind': 'member' }, annotations: { 'rollcall.dev/key': 'member/x/worker-evil' } }, spec: { holderIdentity: 'worker-evil' } }), MEMBER_OLD);
    const stored = await admin.coordination.readNamespacedLease({ name: election, namespace });
    expect(stored.metadata!.labels!['rollcall.dev/kind']).toBe('election');
  });

  it('the member account cannot create a shadow election, nor a Lease that is not Rollcall\'s', async () => {
    const shadow = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'shadow-election', labels: { 'rollcall.dev/cluster': CLUSTER, 'rollcall.dev/kind': 'election' }, annotations: { 'rollcall.dev/key': 'election/scheduler' } }, spec: { holderIdentity: 'worker-evil' } };
    refused(await raw('member', 'POST', leases(), shadow), MEMBER_NEW);
    // A member-labelled Lease whose key says election: the kind and the key must agree.
    refused(await raw('member', 'POST', leases(), { ...shadow, metadata: { ...shadow.metadata, labels: { ...shadow.metadata.labels, 'rollcall.dev/kind': 'member' } } }), MEMBER_NEW);
    refused(await raw('member', 'POST', leases(), { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'plain' }, spec: {} }), MEMBER_NEW);
  });

  it('the member account cannot PATCH or DELETE a Lease that is not Rollcall\'s', async () => {
    refused(await mergePatch('member', 'kube-controller-leader', { spec: { holderIdentity: 'worker-evil' } }), MEMBER_OLD);
    refused(await raw('member', 'DELETE', `${leases()}/kube-controller-leader`), MEMBER_OLD);
    expect(await holderOf('kube-controller-leader')).toBe('kube-controller');
  });

  it('the member account cannot hand another member\'s record to a third identity', async () => {
    const worker = await open('member', 'worker-h');
    await worker.announce({ role: 'holder-test' });
    const name = objectName(CLUSTER, memberKey('holder-test', 'worker-h'));
    refused(await mergePatch('member', name, { spec: { holderIdentity: 'worker-evil' } }), MEMBER_HOLDER);
    expect(await holderOf(name)).toBe('worker-h');
  });

  it('the coordinator account cannot write, take or delete a Lease that is not Rollcall\'s, nor create one', async () => {
    refused(await mergePatch('coordinator', 'kube-controller-leader', { spec: { holderIdentity: 'coordinator-evil' } }), HOLDER_OLD);
    refused(await mergePatch('coordinator', 'kube-controller-leader', { metadata: { labels: { 'rollcall.dev/cluster': CLUSTER, 'rollcall.dev/kind': 'election' }, annotations: { 'rollcall.dev/key': 'election/kube-controller-leader' } } }), HOLDER_OLD);
    refused(await raw('coordinator', 'DELETE', `${leases()}/kube-controller-leader`), HOLDER_OLD);
    refused(await raw('coordinator', 'POST', leases(), { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'plain-c' }, spec: {} }), HOLDER_NEW);
    expect(await holderOf('kube-controller-leader')).toBe('kube-controller');
  });

  it('the coordinator account cannot move a Rollcall Lease to another cluster or key', async () => {
    refused(await mergePatch('coordinator', election, { metadata: { labels: { 'rollcall.dev/cluster': 'other' } } }), KEEPS);
    refused(await mergePatch('coordinator', election, { metadata: { annotations: { 'rollcall.dev/key': 'election/other' } } }), KEEPS);
  });
});

describe('every path the library takes still works under the policies', () => {
  it('as the member account: announce, update, discover and withdraw', async () => {
    const registry = await open('member', 'worker-1');
    const handle = await registry.announce({ role: 'worker', payload: { status: 'NORMAL' } });
    await handle.update({ status: 'BUSY' });
    await waitFor(async () => (await registry.members('worker')).some((m) => m.id === 'worker-1' && (m.payload as { status?: string }).status === 'BUSY') || undefined, 10_000, 'worker-1 BUSY through the watch');
    await handle.withdraw();
    expect(await registryStore(registry).get(memberKey('worker', 'worker-1'))).toBeUndefined();
  });

  it('as the member account: a crashed member is marked expired and deleted by a reader (the holder cleared, then the delete)', async () => {
    const reader = await open('member', 'worker-reader');
    const events: MemberEvent[] = [];
    reader.watchMembers('crash', (e) => events.push(e));
    const now = formatMicroTime(new Date());
    await registryStore(reader).create(memberKey('crash', 'worker-gone'), { holderIdentity: 'worker-gone', leaseDurationSeconds: 2, acquireTime: now, renewTime: now, leaseTransitions: 1 });
    await waitFor(() => events.find((e) => e.type === 'removed'), 15_000, 'the reader to remove the crashed member');
    expect(events.map((e) => `${e.type} ${e.member.id}`)).toEqual(['added worker-gone', 'removed worker-gone']);
    await waitFor(async () => (await registryStore(reader).get(memberKey('crash', 'worker-gone'))) === undefined || undefined, 10_000, 'the marked record deleted');
  });

  it('as the member account: a marked record is written back by its member', async () => {
    const worker = await open('member', 'worker-back');
    await worker.announce({ role: 'back' });
    const name = objectName(CLUSTER, memberKey('back', 'worker-back'));
    const marked = await mergePatch('member', name, { spec: { holderIdentity: '' } });
    expect(marked.status, JSON.stringify(marked.body)).toBe(200);
    const back = await mergePatch('member', name, { spec: { holderIdentity: 'worker-back' } });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
  });

  it('with registry.member.liveness=reaper: the member account announces, heartbeats and withdraws; the coordinator reaps', async () => {
    await reaperRoundTrip(await open('coordinator', 'coordinator-r', true), await open('member', 'worker-r', true), 'worker-r');
  });

  it('failover records: the coordinator account writes them, the member account cannot create one', async () => {
    const record = (name: string) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, labels: { 'rollcall.dev/cluster': CLUSTER, 'rollcall.dev/kind': 'failover', 'rollcall.dev/role': 'worker' }, annotations: { 'rollcall.dev/key': `failover/worker/w9/${name}` } }, spec: { holderIdentity: 'coordinator-1', leaseDurationSeconds: 1 } });
    refused(await raw('member', 'POST', leases(), record('failover-by-member')), MEMBER_NEW);
    const made = await raw('coordinator', 'POST', leases(), record('failover-by-coordinator'));
    expect(made.status, JSON.stringify(made.body)).toBe(201);
  });

  it('as the coordinator account: campaign, hand over, lock and release', async () => {
    const a = await open('coordinator', 'coordinator-a');
    const b = await open('coordinator', 'coordinator-b');
    const first = a.campaign('handover');
    const token = await first.whenElected(AbortSignal.timeout(10_000));
    const second = b.campaign('handover');
    await first.resign();
    expect(await second.whenElected(AbortSignal.timeout(15_000))).toBeGreaterThan(token);
    const lock = await a.lock('nightly', { timeoutMs: 10_000 });
    expect(lock.fencingToken).toBeGreaterThan(0);
    await lock.release();
    await second.resign();
  });
});
