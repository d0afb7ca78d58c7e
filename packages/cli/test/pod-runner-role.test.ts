import { AuthorizationV1Api, CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml, Watch, type KubernetesObject } from '@kubernetes/client-node';
import { waitFor } from '@rollcall/conformance';
import { ApiClient, loadKubeConfig, userAgent } from '@rollcall/kube-client';
import { KubeAdmin, readTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { afterAll, describe, expect, it } from 'vitest';
import { withTermLease } from '../src/commands/manifests.js';
import { run } from './cli.js';

// The real API server of tools/ (RBAC on). Each verb the pod runner's Role grants, tried with a raw
// request as the runner's own service account; and what it must not have, refused.
const kube = readTestEnv().kubernetes!;
const kc = new KubeConfig();
kc.loadFromFile(kube.kubeconfig);
const namespaces: string[] = [];
const clients: ApiClient[] = [];

afterAll(async () => {
  for (const c of clients) c.close();
  for (const name of namespaces) await kc.makeApiClient(CoreV1Api).deleteNamespace({ name }).catch(() => {});
});

/** A namespace with what `rollcall manifests --role pod-runner [args]` prints applied (only the documents `keep` keeps), and a client as its service account once the authorizer has its Role. */
async function asRunner(args: string[], keep: (doc: KubernetesObject) => boolean = () => true): Promise<{ namespace: string; api: ApiClient; kubeconfig: string }> {
  const namespace = await new KubeAdmin().namespace('runner-role');
  namespaces.push(namespace);
  const printed = await run(['manifests', '--role', 'pod-runner', '--namespace', namespace, ...args]);
  expect(printed.code, printed.stderr).toBe(0);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const doc of (loadAllYaml(printed.stdout) as KubernetesObject[]).filter(keep)) await objects.create(doc);
  const user = `system:serviceaccount:${namespace}:rollcall-pod-runner`;
  const groups = ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'];
  const authz = kc.makeApiClient(AuthorizationV1Api);
  await waitFor(async () => (await authz.createSubjectAccessReview({ body: { spec: { user, groups, resourceAttributes: { namespace, verb: 'create', resource: 'leases', group: 'coordination.k8s.io' } } } })).status?.allowed === true, 30_000, 'the authorizer to grant the runner its Role');
  const kubeconfig = await serviceAccountKubeconfig(namespace, 'rollcall-pod-runner');
  const api = new ApiClient(loadKubeConfig({ kubeconfig }), 10_000, userAgent('runner-role-test'));
  clients.push(api);
  return { namespace, api, kubeconfig };
}

/** A request's outcome: `ok`, or the mapped error code. */
async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

/** A watch of `path` for one second as the kubeconfig's identity: `ok` when it runs to its end, else the HTTP status. */
function watchOutcome(kubeconfig: string, path: string): Promise<string> {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfig);
  return new Promise((resolve) => {
    const done = (err: unknown) => resolve(err ? String((err as { statusCode?: number; code?: number }).statusCode ?? (err as { code?: number }).code ?? err) : 'ok');
    new Watch(config).watch(path, { timeoutSeconds: 1 }, () => {}, done).catch(done);
  });
}

const lease = (name: string, runner: string) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, labels: { 'rollcall.dev/runner-term': runner } }, spec: { leaseTransitions: 0 } });

describe("the pod runner's Role, as its service account", () => {
  it('ConfigMaps get list watch create update patch delete and the term Lease get create update are granted; Secrets and pods/exec are not', async () => {
    const { namespace, api, kubeconfig } = await asRunner([]);
    const cms = `/api/v1/namespaces/${namespace}/configmaps`;
    const ctx = (verb: string, resource = 'configmaps') => ({ verb, resource, namespace });
    const record = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'r-task-t1-00000000', labels: { 'rollcall.dev/task-record': 'r' } }, data: { format: '2' } };
    const created = await api.request<{ metadata: { resourceVersion: string } }>({ method: 'POST', path: cms, body: record, context: ctx('create') });
    expect(await outcome(api.request({ method: 'GET', path: `${cms}/r-task-t1-00000000`, context: ctx('get') }))).toBe('ok');
    expect(await outcome(api.request({ method: 'GET', path: `${cms}?labelSelector=rollcall.dev%2Ftask-record%3Dr`, context: ctx('list') }))).toBe('ok');
    expect(await watchOutcome(kubeconfig, cms)).toBe('ok');
    expect(await watchOutcome(kubeconfig, `/api/v1/namespaces/${namespace}/secrets`)).toBe('403');
    const updated = await api.request<{ metadata: { resourceVersion: string } }>({ method: 'PUT', path: `${cms}/r-task-t1-00000000`, body: { ...record, metadata: { ...record.metadata, resourceVersion: created.metadata.resourceVersion }, data: { format: '2', record: '{}' } }, context: ctx('update') });
    expect(updated.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);
    expect(await outcome(api.request({ method: 'PATCH', path: `${cms}/r-task-t1-00000000`, body: { metadata: { annotations: { 'rollcall.dev/cancel-requested': 'x' } } }, contentType: 'application/merge-patch+json', context: ctx('patch') }))).toBe('ok');
    expect(await outcome(api.request({ method: 'DELETE', path: `${cms}/r-task-t1-00000000`, context: ctx('delete') }))).toBe('ok');

    const leases = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    const made = await api.request<{ metadata: { resourceVersion: string } }>({ method: 'POST', path: leases, body: lease('pod-runner-r-term', 'r'), context: ctx('create', 'leases') });
    expect(await outcome(api.request({ method: 'GET', path: `${leases}/pod-runner-r-term`, context: ctx('get', 'leases') }))).toBe('ok');
    expect(await outcome(api.request({ method: 'PUT', path: `${leases}/pod-runner-r-term`, body: { ...lease('pod-runner-r-term', 'r'), metadata: { ...lease('pod-runner-r-term', 'r').metadata, resourceVersion: made.metadata.resourceVersion }, spec: { leaseTransitions: 1 } }, context: ctx('update', 'leases') }))).toBe('ok');

    // what it must not have
    expect(await outcome(api.request({ method: 'GET', path: `/api/v1/namespaces/${namespace}/secrets`, context: ctx('list', 'secrets') }))).toBe('PERMISSION_DENIED');
    expect(await outcome(api.request({ method: 'POST', path: `/api/v1/namespaces/${namespace}/pods/nope/exec?command=true`, body: {}, context: ctx('create', 'pods/exec') }))).toBe('PERMISSION_DENIED');
  });

  it('--runner r: its Role (without the election Role, a runner with no registry) gets and updates only pod-runner-r-term; another Lease is refused, a create is not limited by name', async () => {
    const { namespace, api } = await asRunner(['--runner', 'r'], (doc) => !doc.metadata?.name?.endsWith('-election'));
    const leases = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`;
    const ctx = (verb: string) => ({ verb, resource: 'leases', namespace });
    const own = await api.request<{ metadata: { resourceVersion: string } }>({ method: 'POST', path: leases, body: lease('pod-runner-r-term', 'r'), context: ctx('create') });
    expect(await outcome(api.request({ method: 'GET', path: `${leases}/pod-runner-r-term`, context: ctx('get') }))).toBe('ok');
    expect(await outcome(api.request({ method: 'PUT', path: `${leases}/pod-runner-r-term`, body: { ...lease('pod-runner-r-term', 'r'), metadata: { ...lease('pod-runner-r-term', 'r').metadata, resourceVersion: own.metadata.resourceVersion }, spec: { leaseTransitions: 1 } }, context: ctx('update') }))).toBe('ok');
    const other = await api.request<{ metadata: { resourceVersion: string } }>({ method: 'POST', path: leases, body: lease('pod-runner-other-term', 'other'), context: ctx('create') });
    expect(await outcome(api.request({ method: 'GET', path: `${leases}/pod-runner-other-term`, context: ctx('get') }))).toBe('PERMISSION_DENIED');
    expect(await outcome(api.request({ method: 'PUT', path: `${leases}/pod-runner-other-term`, body: { ...lease('pod-runner-other-term', 'other'), metadata: { ...lease('pod-runner-other-term', 'other').metadata, resourceVersion: other.metadata.resourceVersion }, spec: { leaseTransitions: 1 } }, context: ctx('update') }))).toBe('PERMISSION_DENIED');
    expect(await outcome(api.request({ method: 'GET', path: leases, context: ctx('list') }))).toBe('PERMISSION_DENIED');
  });

  it('--runner rewrites the shipped term Lease rule, and says so when the file has none; it is refused beside another role, --fencing or a bad name', async () => {
    const r = await run(['manifests', '--role', 'pod-runner', '--namespace', 'prod', '--runner', 'batch']);
    expect(r.code, r.stderr).toBe(0);
    const role = (loadAllYaml(r.stdout) as { kind: string; metadata: { name: string }; rules?: { resources: string[]; resourceNames?: string[]; verbs: string[] }[] }[]).find((d) => d.kind === 'Role' && d.metadata.name === 'rollcall-pod-runner')!;
    expect(role.rules!.filter((x) => x.resources.includes('leases'))).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['pod-runner-batch-term'], verbs: ['get', 'update'] },
    ]);
    expect(() => withTermLease('kind: Role\nrules: []\n', 'batch')).toThrow(/no term Lease rule/);
    for (const args of [['--role', 'member', '--runner', 'batch'], ['--role', 'pod-runner', '--fencing', '--runner', 'batch'], ['--role', 'pod-runner', '--runner', 'Bad_Name']]) {
      const refused = await run(['manifests', '--namespace', 'prod', ...args]);
      expect(refused.code, args.join(' ')).toBe(2);
    }
  });
});
