import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { ApiClient, userAgent } from '@rollcall/kube-client';
import { systemClock } from '@rollcall/core';
import { holdRequests, requestAs, type RawAnswer } from '@rollcall/tools/testenv';
import type { ApiRequest } from '@rollcall/kube-client';
import { beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import type { Pod } from '../src/pod.js';
import { PodsApi } from '../src/pods-api.js';
import {
  FENCING_NAMESPACE_LABEL,
  fencingPolicy,
  RUNNER_LABEL,
  STALE_TERM_MESSAGE,
  TermFence,
  termLeaseName,
} from '../src/index.js';
import { CANCEL_REQUESTED_ANNOTATION, TASK_RECORD_LABEL, TASK_STATE_LABEL, WRITE_TERM_ANNOTATION } from '../src/task-record.js';
import { admin, installSuitePolicy, runnerNamespace } from './runner-env.js';

/**
 * The fencing policy on the API server, as the runner's account with raw
 * requests: a write stamped with a term that is not its runner's term Lease's
 * is refused with the policy's message, the current term's is accepted, a
 * follower's submit and request annotations pass unfenced, and the term Lease
 * only rises. Generated under names of this suite's own and bound by a suite
 * label only its namespaces carry, so suites sharing the API server are
 * unaffected. The policies are replaced, never deleted: an API server drops a
 * paramKind's informer for good once no binding names it (kubernetes#130887),
 * and every later fenced request would then find no params.
 */

const SUITE = 'fence-policy-suite';
const POLICIES = fencingPolicy({ namePrefix: `rollcall-${SUITE}`, namespaceSelector: { matchLabels: { [FENCING_NAMESPACE_LABEL]: SUITE } } }) as unknown as Checked[];
type Checked = KubernetesObject & { kind: string; metadata: { name: string; generation?: number }; status?: { observedGeneration?: number; typeChecking?: { expressionWarnings?: { fieldRef: string; warning: string }[] } } };

const RUNNER = 'fx';
let env: { namespace: string; kubeconfig: string };
let unfenced: { namespace: string; kubeconfig: string };
let fence: TermFence;
let client: ApiClient;

const raw = (method: string, path: string, body?: unknown, contentType?: string) => requestAs(env.kubeconfig, method, path, body, contentType);
const merge = 'application/merge-patch+json';
const pods = () => `/api/v1/namespaces/${env.namespace}/pods`;
const configMaps = () => `/api/v1/namespaces/${env.namespace}/configmaps`;
const leases = () => `/apis/coordination.k8s.io/v1/namespaces/${env.namespace}/leases`;
const stamp = (term: number | undefined) => (term === undefined ? {} : { [WRITE_TERM_ANNOTATION]: String(term) });

const pod = (name: string, term: number | undefined) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: { [RUNNER_LABEL]: RUNNER }, annotations: stamp(term) }, spec: { containers: [{ name: 'main', image: 'registry.example/task:1' }] } });
const record = (name: string, state: string, term: number | undefined) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { [TASK_RECORD_LABEL]: RUNNER, [TASK_STATE_LABEL]: state }, annotations: stamp(term) }, data: { format: '2', record: '{}' } });

const FENCED = `rollcall-pod-runner ${STALE_TERM_MESSAGE}`;
const LEASE_CREATE = 'rollcall-pod-runner creates a term Lease only at term 0';
const LEASE_RAISE = "rollcall-pod-runner may only raise a term Lease's spec.leaseTransitions";
const LEASE_DELETE = 'rollcall-pod-runner may not delete a term Lease';

function refused(answer: RawAnswer, message: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(403);
  expect(answer.body.message).toContain('ValidatingAdmissionPolicy');
  expect(answer.body.message).toContain(message);
}
function accepted(answer: RawAnswer, status: number): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
}

function clientFor(kubeconfig: string): ApiClient {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return new ApiClient(kc, 10_000, userAgent(undefined), systemClock);
}

/** The runner's account may also update and delete ConfigMaps (the second generation's Role: records are PUT and deleted). */
async function grantRecordWrites(namespace: string): Promise<void> {
  await admin.objects.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: 'fence-records', namespace }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['update', 'delete'] }] } as KubernetesObject);
  await admin.objects.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'fence-records', namespace }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'fence-records' }, subjects: [{ kind: 'ServiceAccount', name: 'rollcall-pod-runner', namespace }] } as KubernetesObject);
}

beforeAll(async () => {
  env = await runnerNamespace('fence');
  unfenced = await runnerNamespace('fence-off');
  await grantRecordWrites(env.namespace);
  await installSuitePolicy(POLICIES, env.namespace, SUITE);
  // The policy judges the namespace once compiled: an unstamped record refused (403), or refused for want of a term Lease (422).
  await waitFor(async () => {
    const answer = await raw('POST', `${configMaps()}?dryRun=All`, record('rec-probe', 'finished', undefined));
    return ([403, 422].includes(answer.status) && (answer.body.message ?? '').includes(`rollcall-${SUITE}-pod-runner-fencing`)) || undefined;
  }, 30_000, 'the fencing policy to take effect');
  client = clientFor(env.kubeconfig);
  fence = new TermFence({ client, namespace: env.namespace, runner: RUNNER });
}, 90_000);

describe('the policies on the API server', () => {
  it('type-check against the Pod, ConfigMap and Lease schemas with no warning', async () => {
    for (const doc of POLICIES.filter((d) => d.kind === 'ValidatingAdmissionPolicy')) {
      const stored = (await admin.objects.read(doc)) as Checked;
      expect(stored.status?.typeChecking?.expressionWarnings ?? [], stored.metadata.name).toEqual([]);
    }
  });
});

describe('the term Lease and its probe, as the runner account', () => {
  it('created at 0, raised by compare-and-set, probed until the server shows the term: mode server', async () => {
    const first = await fence.enter();
    expect(first).toEqual({ term: 1, mode: 'server' });
    const second = await fence.enter();
    expect(second).toEqual({ term: first.term + 1, mode: 'server' });
    expect(await fence.enter(first.term + 10)).toEqual({ term: first.term + 10, mode: 'server' });
    await expect(fence.raise(first.term + 5)).rejects.toMatchObject({ code: 'LEASE_LOST' });
    expect((await fence.read())?.term).toBe(first.term + 10);
  }, 60_000);

  it('in a namespace the policy does not judge, the probe reports client-only fencing', async () => {
    const off = new TermFence({ client: clientFor(unfenced.kubeconfig), namespace: unfenced.namespace, runner: RUNNER });
    expect(await off.enter()).toEqual({ term: 1, mode: 'client' });
  });

  it('the runner account may not lower, relabel or delete its term Lease, nor create one above 0', async () => {
    const lease = (await raw('GET', `${leases()}/${termLeaseName(RUNNER)}`)).body as { spec: { leaseTransitions: number } };
    const term = lease.spec.leaseTransitions;
    refused(await raw('PATCH', `${leases()}/${termLeaseName(RUNNER)}`, { spec: { leaseTransitions: term - 1 } }, merge), LEASE_RAISE);
    refused(await raw('PATCH', `${leases()}/${termLeaseName(RUNNER)}`, { spec: { holderIdentity: 'someone' } }, merge), LEASE_RAISE);
    refused(await raw('PATCH', `${leases()}/${termLeaseName(RUNNER)}`, { metadata: { labels: { 'rollcall.dev/runner-term': 'other' } }, spec: { leaseTransitions: term + 1 } }, merge), LEASE_RAISE);
    refused(await raw('DELETE', `${leases()}/${termLeaseName(RUNNER)}`), LEASE_DELETE);
    refused(await raw('POST', `${leases()}?dryRun=All`, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: termLeaseName('other'), labels: { 'rollcall.dev/runner-term': 'other' } }, spec: { leaseTransitions: 7 } }), LEASE_CREATE);
    refused(await raw('POST', `${leases()}?dryRun=All`, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'elsewhere', labels: { 'rollcall.dev/runner-term': 'other' } }, spec: { leaseTransitions: 0 } }), LEASE_CREATE);
    expect((await fence.read())?.term).toBe(term);
  });
});

describe('writes of a stale term are refused by the API server', () => {
  it('a pod create stamped with a stale term is refused; the current term\'s is stored', async () => {
    const { term } = await fence.enter();
    refused(await raw('POST', `${pods()}?dryRun=All`, pod('stale-create', term - 1)), FENCED);
    refused(await raw('POST', `${pods()}?dryRun=All`, pod('unstamped-create', undefined)), FENCED);
    accepted(await raw('POST', pods(), pod('current-create', term)), 201);
  });

  it('a record update of a stale term is refused, though its resourceVersion matches; the current term\'s passes', async () => {
    const { term } = await fence.enter();
    accepted(await raw('POST', configMaps(), record('rec-update', 'finished', term)), 201);
    const stored = (await raw('GET', `${configMaps()}/rec-update`)).body as { metadata: { resourceVersion: string } };
    const put = (t: number) => raw('PUT', `${configMaps()}/rec-update`, { ...record('rec-update', 'done', t), metadata: { ...record('rec-update', 'done', t).metadata, resourceVersion: stored.metadata.resourceVersion } });
    refused(await put(term - 1), FENCED);
    expect((await raw('GET', `${configMaps()}/rec-update`)).body).toMatchObject({ metadata: { labels: { [TASK_STATE_LABEL]: 'finished' }, resourceVersion: stored.metadata.resourceVersion } });
    accepted(await put(term), 200);
  });

  it('a record delete is judged by the stored record\'s stamp: refused once the term moved on, accepted after a restamp', async () => {
    const { term } = await fence.enter();
    accepted(await raw('POST', configMaps(), record('rec-delete', 'done', term)), 201);
    const next = await fence.enter();
    refused(await raw('DELETE', `${configMaps()}/rec-delete`), FENCED);
    expect((await raw('GET', `${configMaps()}/rec-delete`)).status).toBe(200);
    accepted(await raw('PATCH', `${configMaps()}/rec-delete`, { metadata: { annotations: stamp(next.term) } }, merge), 200);
    accepted(await raw('DELETE', `${configMaps()}/rec-delete`), 200);
  });

  it('a pod delete of a stale term is refused; the release patch restamps it and its delete with preconditions passes', async () => {
    const { term } = await fence.enter();
    const api = new PodsApi(client, env.namespace);
    const created = await api.create(pod('pod-delete', undefined) as unknown as Pod, term);
    expect(created.metadata.annotations?.[WRITE_TERM_ANNOTATION]).toBe(String(term));
    const next = await fence.enter();
    refused(await raw('DELETE', `${pods()}/pod-delete`), FENCED);
    expect((await raw('GET', `${pods()}/pod-delete`)).body).toMatchObject({ metadata: { uid: created.metadata.uid } });
    await expect(api.patchMetadata('pod-delete', { annotations: { 'rollcall.dev/recorded': 'true' } }, { term: next.term, resourceVersion: '1' })).rejects.toMatchObject({ code: 'CONFLICT' });
    // kwok has moved the pod on since its create: the patch names the version just read.
    const read = await api.get('pod-delete');
    const released = await api.patchMetadata('pod-delete', { annotations: { 'rollcall.dev/recorded': 'true' } }, { term: next.term, resourceVersion: read.metadata.resourceVersion! });
    expect(released.metadata.annotations?.[WRITE_TERM_ANNOTATION]).toBe(String(next.term));
    await expect(api.delete('pod-delete', 0, { uid: released.metadata.uid!, resourceVersion: read.metadata.resourceVersion! })).rejects.toMatchObject({ code: 'CONFLICT' });
    await api.delete('pod-delete', 0, { uid: released.metadata.uid!, resourceVersion: released.metadata.resourceVersion! });
    expect((await raw('GET', `${pods()}/pod-delete`)).status).toBe(404);
  });
});

describe('two runners in one namespace', () => {
  it("each runner's writes are judged by its own term Lease only: the other's term neither admits nor refuses them", async () => {
    const { term } = await fence.enter();
    const other = new TermFence({ client, namespace: env.namespace, runner: 'fy' });
    const theirs = await other.enter(term + 40);
    expect(theirs).toEqual({ term: term + 40, mode: 'server' });
    const podOf = (runner: string, name: string, t: number) => ({ ...pod(name, t), metadata: { ...pod(name, t).metadata, labels: { [RUNNER_LABEL]: runner } } });
    accepted(await raw('POST', `${pods()}?dryRun=All`, podOf(RUNNER, 'mine', term)), 201);
    accepted(await raw('POST', `${pods()}?dryRun=All`, podOf('fy', 'theirs', term + 40)), 201);
    refused(await raw('POST', `${pods()}?dryRun=All`, podOf(RUNNER, 'mine-their-term', term + 40)), FENCED);
    refused(await raw('POST', `${pods()}?dryRun=All`, podOf('fy', 'theirs-my-term', term)), FENCED);
  });
});

describe('a write in flight when the term moves on', () => {
  it('a pod create held in the API client (past the runner\'s own gate) while a new term is entered is refused when it lands', async () => {
    const { term } = await fence.enter();
    const api = new PodsApi(client, env.namespace);
    const hold = holdRequests<ApiRequest>(client, (req) => req.method === 'POST' && req.path === api.path);
    try {
      const create = api.create(pod('held-create', undefined) as unknown as Pod, term);
      const held = await hold.held;
      expect((held.body as Pod).metadata.annotations?.[WRITE_TERM_ANNOTATION]).toBe(String(term));
      expect((await fence.enter()).term).toBe(term + 1);
      hold.release();
      await expect(create).rejects.toMatchObject({ code: 'PERMISSION_DENIED', message: expect.stringContaining(FENCED) });
      expect((await raw('GET', `${pods()}/held-create`)).status).toBe(404);
    } finally {
      hold.restore();
    }
  });
});

describe('unfenced: what a follower writes', () => {
  it("a follower's queued-record create passes with no term; a finished one does not", async () => {
    await fence.enter();
    accepted(await raw('POST', configMaps(), record('rec-submit', 'queued', undefined)), 201);
    refused(await raw('POST', `${configMaps()}?dryRun=All`, record('rec-finished', 'finished', undefined)), FENCED);
  });

  it('an update that only adds or changes a request annotation passes on a record of an older term; one that also changes data, or removes a request, does not', async () => {
    const { term } = await fence.enter();
    accepted(await raw('POST', configMaps(), record('rec-cancel', 'queued', term)), 201);
    await fence.enter();
    accepted(await raw('PATCH', `${configMaps()}/rec-cancel`, { metadata: { annotations: { [CANCEL_REQUESTED_ANNOTATION]: 'by a follower' } } }, merge), 200);
    accepted(await raw('PATCH', `${configMaps()}/rec-cancel`, { metadata: { annotations: { [CANCEL_REQUESTED_ANNOTATION]: 'again' } } }, merge), 200);
    refused(await raw('PATCH', `${configMaps()}/rec-cancel`, { metadata: { annotations: { [CANCEL_REQUESTED_ANNOTATION]: null } } }, merge), FENCED);
    refused(await raw('PATCH', `${configMaps()}/rec-cancel`, { metadata: { annotations: { [CANCEL_REQUESTED_ANNOTATION]: 'x', 'rollcall.dev/other': 'y' } } }, merge), FENCED);
    refused(await raw('PATCH', `${configMaps()}/rec-cancel`, { data: { record: '{"state":"finished"}' }, metadata: { annotations: { [CANCEL_REQUESTED_ANNOTATION]: 'x' } } }, merge), FENCED);
    refused(await raw('PATCH', `${configMaps()}/rec-cancel`, { metadata: { labels: { [TASK_STATE_LABEL]: 'done' } } }, merge), FENCED);
  });

  it('requests of other accounts are not judged: an admin writes an unstamped task pod', async () => {
    await admin.core.createNamespacedPod({ namespace: env.namespace, body: pod('admin-pod', undefined) as never, dryRun: 'All' });
  });
});
