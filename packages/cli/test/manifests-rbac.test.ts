import { readdirSync, readFileSync } from 'node:fs';
import { CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';
import { createRegistry, ErrorCode, type Registry } from '@rollcall/core';
import { createPodRunner } from '@rollcall/pod-runner';
import { AuditLog, KubeAdmin, readTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { afterAll, describe, expect, it } from 'vitest';
import { run } from './cli.js';

// Every manifest `rollcall manifests` prints, applied literally to the real API server of tools/ (RBAC on),
// and the component it is for run under the service account it binds.
const kube = readTestEnv().kubernetes!;
const kc = new KubeConfig();
kc.loadFromFile(kube.kubeconfig);
const DEPLOY = new URL('../../../deploy/kubernetes/', import.meta.url);

interface Doc extends KubernetesObject {
  roleRef?: { name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
}

const files = readdirSync(DEPLOY).filter((f) => /^rollcall-.+\.yaml$/.test(f));
/** Every Role shipped, so one added later is covered by the check below. */
const SHIPPED_ROLES = files.flatMap((f) => (loadAllYaml(readFileSync(new URL(f, DEPLOY), 'utf8')) as Doc[]).filter((d) => d.kind === 'Role').map((d) => d.metadata!.name!)).sort();
const COMPONENTS = files.map((f) => /^rollcall-(.+)\.yaml$/.exec(f)![1]!).filter((r) => r !== 'configmap-lock' && r !== 'pod-liveness' && !r.endsWith('admission') && !r.endsWith('fencing'));
type Liveness = 'heartbeat' | 'pod';
const CASES = COMPONENTS.flatMap((role) =>
  (role === 'pod-runner'
    ? [[role, 'lease', 'heartbeat']]
    : [
        [role, 'lease', 'heartbeat'],
        [role, 'configmap', 'heartbeat'],
        [role, 'lease', 'pod'],
      ]) as [string, 'lease' | 'configmap', Liveness][],
);

const namespaces: string[] = [];
const printedRoles = new Set<string>();
const opened: { close(): Promise<unknown> }[] = [];
afterAll(async () => {
  await Promise.allSettled(opened.map((o) => o.close()));
  const core = kc.makeApiClient(CoreV1Api);
  await Promise.allSettled(namespaces.map((name) => core.deleteNamespace({ name })));
});

/** Applies what `rollcall manifests --role <role> --namespace <ns> [--lock configmap] [--liveness pod]` prints, as `| kubectl apply -f -` does. */
async function applyPrinted(role: string, lock: string, liveness: Liveness, namespace: string): Promise<Doc[]> {
  const printed = await run(['manifests', '--role', role, '--namespace', namespace, ...(lock === 'configmap' ? ['--lock', 'configmap'] : []), ...(liveness === 'pod' ? ['--liveness', 'pod'] : [])]);
  expect(printed.code, printed.stderr).toBe(0);
  const docs = loadAllYaml(printed.stdout) as Doc[];
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const doc of docs) await objects.create(doc);
  return docs;
}

async function registryAs(kubeconfig: string, namespace: string, lock: string, identity: string, podUid?: string): Promise<Registry> {
  const member = podUid ? { member: { liveness: 'pod' as const } } : {};
  const registry = await createRegistry({ type: 'kubernetes', cluster: 'manifests', identity, ...member, kubernetes: { kubeconfig, namespace, lock: lock as 'lease' | 'configmap', ...(podUid ? { podUid } : {}) } });
  opened.push(registry);
  return registry;
}

/** What each component does with its identity: enough to prove its manifest grants what it needs. */
const component: Record<string, (kubeconfig: string, namespace: string, lock: string) => Promise<void>> = {
  async coordinator(kubeconfig, namespace, lock) {
    const registry = await registryAs(kubeconfig, namespace, lock, 'coordinator-1');
    await registry.announce({ role: 'master' });
    expect((await registry.members('master')).map((m) => m.id)).toEqual(['coordinator-1']);
    const leadership = registry.campaign('scheduler');
    expect(await leadership.whenElected(AbortSignal.timeout(15_000))).toBeGreaterThan(0);
    const held = await registry.lock('nightly', { timeoutMs: 15_000 });
    await held.release();
    await registry.close();
  },
  async member(kubeconfig, namespace, lock) {
    const registry = await registryAs(kubeconfig, namespace, lock, 'worker-1');
    const handle = await registry.announce({ role: 'worker', payload: { status: 'NORMAL' } });
    await handle.update({ status: 'BUSY' });
    expect((await registry.members('worker')).map((m) => m.id)).toEqual(['worker-1']);
    // The narrower identity: refused what only a coordinator may do.
    await expect(registry.campaign('scheduler').whenElected(AbortSignal.timeout(15_000))).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    await registry.close();
  },
  async viewer(kubeconfig, namespace, lock) {
    // What there is to see, written by the admin; then the read commands as the viewer, and a read-only registry.
    const writer = await registryAs(kube.kubeconfig, namespace, lock, 'writer-1');
    await writer.announce({ role: 'worker' });
    expect(await writer.campaign('scheduler').whenElected(AbortSignal.timeout(15_000))).toBeGreaterThan(0);
    await writer.lock('nightly', { timeoutMs: 15_000 });
    const admin = new KubeAdmin();
    const audit = new AuditLog(kube.auditLogPath, async (name) => void (await admin.coordination.readNamespacedLease({ name, namespace }).catch(() => undefined)));
    const window = audit.open();
    const args = ['-t', 'kubernetes', '-c', 'manifests', '-o', `registry.kubernetes.kubeconfig=${kubeconfig}`, '-o', `registry.kubernetes.namespace=${namespace}`, '-o', `registry.kubernetes.lock=${lock}`];
    const members = await run(['members', 'worker', ...args]);
    expect(members.code, members.stderr).toBe(0);
    expect(members.stdout).toMatch(/^worker +writer-1 /m);
    expect((await run(['leader', 'scheduler', ...args])).stdout).toMatch(/^scheduler +writer-1 /m);
    expect((await run(['locks', ...args])).stdout).toMatch(/^nightly +writer-1/m);
    const doctor = await run(['doctor', '--role', 'viewer', ...args]);
    expect(doctor.code, doctor.stdout).toBe(0);
    const viewer = await createRegistry({ type: 'kubernetes', cluster: 'manifests', identity: 'viewer-1', readOnly: true, kubernetes: { kubeconfig, namespace, lock: lock as 'lease' | 'configmap' } });
    opened.push(viewer);
    expect((await viewer.members('worker')).map((m) => m.id)).toEqual(['writer-1']);
    await viewer.close();
    // The server's count: not one write (create, update, patch, delete — dry runs included) from the viewer, whatever it read.
    const user = `system:serviceaccount:${namespace}:rollcall-viewer`;
    const reads = ['get', 'list', 'watch'];
    const byViewer = await audit.closeWhere(window, (e) => e.user?.username === user && e.objectRef?.resource !== 'selfsubjectaccessreviews');
    expect(byViewer.total).toBeGreaterThan(0);
    expect(Object.keys(byViewer.byMethod).filter((verb) => !reads.includes(verb))).toEqual([]);
    // The identity itself may not write: a registry that tried would be refused by the API server.
    const writing: Registry | Error = await registryAs(kubeconfig, namespace, lock, 'viewer-2').catch((err: Error) => err);
    if (!(writing instanceof Error)) await expect(writing.announce({ role: 'worker' })).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    await writer.close();
  },
  async 'pod-runner'(kubeconfig, namespace) {
    // HA: the runner campaigns for its election (a Lease update) before it creates any pod.
    const registry = await registryAs(kubeconfig, namespace, 'lease', 'runner-1');
    const runner = await createPodRunner({ registry, identity: 'runner-1', namespace, kubeconfig, name: 'rbac', templates: [{ name: 'plain', template: { spec: { containers: [{ name: 'task', image: 'task:1' }] } } }] });
    opened.push(runner);
    await runner.submit({ taskId: 'rbac-task', taskType: 'report', annotations: { 'kwok.rollcall.dev/exit-code': '0', 'kwok.rollcall.dev/run-for': '1s' } });
    expect(await runner.result('rbac-task')).toMatchObject({ phase: 'succeeded' });
    await runner.close();
    await registry.close();
  },
};

/**
 * registry.member.liveness=pod: a pod behind the role's Service, and the component
 * standing in for it announces and reads with its own identity — the readiness
 * check at announce and the readers' watch both read EndpointSlices, and nothing else new.
 */
async function podMember(kubeconfig: string, namespace: string, lock: string, id: string, role: string): Promise<void> {
  const admin = new KubeAdmin();
  await admin.core.createNamespacedService({ namespace, body: { metadata: { name: 'rollcall-worker' }, spec: { clusterIP: 'None', selector: { app: 'worker' }, ports: [{ name: 'probe', port: 8086 }] } } });
  const pod = await admin.core.createNamespacedPod({ namespace, body: { metadata: { name: id, labels: { app: 'worker' } }, spec: { containers: [{ name: 'main', image: 'registry.invalid/worker:1' }] } } });
  // A viewer announces nothing: the admin's member is what it reads, read-only.
  const writer = await registryAs(role === 'viewer' ? kube.kubeconfig : kubeconfig, namespace, lock, id, pod.metadata!.uid!);
  await writer.announce({ role: 'worker' });
  const reader =
    role === 'viewer'
      ? await createRegistry({ type: 'kubernetes', cluster: 'manifests', identity: 'viewer-pod', readOnly: true, member: { liveness: 'pod' }, kubernetes: { kubeconfig, namespace, lock: lock as 'lease' | 'configmap' } })
      : writer;
  if (reader !== writer) opened.push(reader);
  expect((await reader.members('worker')).map((m) => m.id)).toEqual([id]);
  await reader.close();
  await writer.close();
}

describe('every printed manifest, applied literally, is enough for its component under its own service account', () => {
  it.each(CASES)('--role %s --lock %s --liveness %s', async (role, lock, liveness) => {
    expect(Object.keys(component)).toContain(role); // a new role's manifest needs a component here
    const namespace = await new KubeAdmin().namespace(`m-${role}`, { forPods: role === 'pod-runner' || liveness === 'pod' });
    namespaces.push(namespace);
    const docs = await applyPrinted(role, lock, liveness, namespace);
    for (const d of docs) if (d.kind === 'Role') printedRoles.add(d.metadata!.name!);
    // Every binding printed binds the account this manifest creates, in the namespace given.
    const bindings = docs.filter((d) => d.kind === 'RoleBinding');
    expect(bindings.length).toBe(docs.filter((d) => d.kind === 'Role').length);
    for (const b of bindings) expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: `rollcall-${role}`, namespace }]);
    const kubeconfig = await serviceAccountKubeconfig(namespace, `rollcall-${role}`);
    if (liveness === 'pod') return podMember(kubeconfig, namespace, lock, `${role}-1`, role);
    await component[role]!(kubeconfig, namespace, lock);
  });

  it('without --liveness pod, a member in pod mode is refused at announce, PERMISSION_DENIED naming endpointslices, and writes nothing', async () => {
    const namespace = await new KubeAdmin().namespace('m-nopod', { forPods: true });
    namespaces.push(namespace);
    await applyPrinted('member', 'lease', 'heartbeat', namespace);
    const admin = new KubeAdmin();
    await admin.core.createNamespacedService({ namespace, body: { metadata: { name: 'rollcall-worker' }, spec: { clusterIP: 'None', selector: { app: 'worker' }, ports: [{ name: 'probe', port: 8086 }] } } });
    const pod = await admin.core.createNamespacedPod({ namespace, body: { metadata: { name: 'worker-1', labels: { app: 'worker' } }, spec: { containers: [{ name: 'main', image: 'registry.invalid/worker:1' }] } } });
    const registry = await registryAs(await serviceAccountKubeconfig(namespace, 'rollcall-member'), namespace, 'lease', 'worker-1', pod.metadata!.uid!);
    await expect(registry.announce({ role: 'worker' })).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED, message: expect.stringContaining('endpointslices') });
    expect(await admin.leases(namespace)).toEqual([]);
  });

  it('between them, the cases above printed every Role shipped in deploy/kubernetes', () => {
    expect([...printedRoles].sort()).toEqual(SHIPPED_ROLES);
  });
});
