import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';
import { createRegistry, type Registry } from '@rollcall/core';
import { readTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from './cli.js';

// The real API server of tools/ (RBAC on), started by the global setup.
const kube = readTestEnv().kubernetes!;
const kc = new KubeConfig();
kc.loadFromFile(kube.kubeconfig);
let namespace: string;
let memberKubeconfig: string;
let registry: Registry;

/** Applies what `rollcall manifests --role <role> --namespace <ns>` prints, as `| kubectl apply -f -` would. */
async function applyManifest(role: string, ns: string): Promise<void> {
  const printed = await run(['manifests', '--role', role, '--namespace', ns]);
  expect(printed.code, printed.stderr).toBe(0);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const doc of loadAllYaml(printed.stdout) as KubernetesObject[]) await objects.create(doc);
}

beforeAll(async () => {
  namespace = `cli-${Math.random().toString(36).slice(2, 8)}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  await applyManifest('member', namespace);
  memberKubeconfig = await serviceAccountKubeconfig(namespace, 'rollcall-member');
  registry = await createRegistry({ type: 'kubernetes', cluster: 'cli', identity: 'worker-k', kubernetes: { kubeconfig: kube.kubeconfig, namespace } });
  await registry.announce({ role: 'worker', payload: { status: 'NORMAL' } });
});

afterAll(async () => {
  await registry?.close();
  if (namespace) await kc.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace }).catch(() => {});
});

describe('without a kubeconfig', () => {
  it('a command fails with INVALID_CONFIG naming registry.kubernetes.kubeconfig and what was tried (exit 3)', async () => {
    const home = mkdtempSync(join(tmpdir(), 'rollcall-home-'));
    try {
      const r = await run(['members', '-t', 'kubernetes'], { env: { HOME: home, KUBECONFIG: '', KUBERNETES_SERVICE_HOST: '' } });
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toMatch(/^rollcall: error INVALID_CONFIG \[kubernetes\]: registry\.kubernetes\.kubeconfig: no kubeconfig found; tried KUBECONFIG \(not set\), .*\.kube\/config \(no such file\), the in-cluster service account/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('on the real Kubernetes API server', () => {
  it('members lists the member Leases, through the flat -o form', async () => {
    const r = await run(['members', '-t', 'kubernetes', '-c', 'cli', '-o', `kubernetes.kubeconfig=${kube.kubeconfig}`, '-o', `kubernetes.namespace=${namespace}`, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ role: 'worker', id: 'worker-k', payload: { status: 'NORMAL' } })]);
  });

  it('doctor: the member Role lacks what a coordinator needs, and says which manifest grants it (exit 8)', async () => {
    const env = { REGISTRY_TYPE: 'kubernetes', REGISTRY_CLUSTER: 'cli', REGISTRY_KUBERNETES_KUBECONFIG: memberKubeconfig, REGISTRY_KUBERNETES_NAMESPACE: namespace };
    const coordinator = await run(['doctor', '--json'], { env });
    expect(coordinator.code, coordinator.stdout + coordinator.stderr).toBe(8);
    const report = JSON.parse(coordinator.stdout) as { checks: { name: string; status: string; missing?: string[]; fix?: string }[] };
    expect(report.checks.find((c) => c.name === 'connection')).toMatchObject({ status: 'ok' });
    expect(report.checks.find((c) => c.name === 'permissions')).toMatchObject({ status: 'fail', missing: ['update leases.coordination.k8s.io'], fix: `rollcall manifests --role coordinator --namespace ${namespace} | kubectl apply -f -` });

    const member = await run(['doctor', '--role', 'member'], { env });
    expect(member.code, member.stdout + member.stderr).toBe(0);
    expect(member.stdout).toMatch(new RegExp(`^OK +permissions +role member: all 6 permissions granted in namespace ${namespace}`, 'm'));
    // The service account's token is in the kubeconfig; it must not be printed.
    const token = (JSON.parse(readFileSync(memberKubeconfig, 'utf8')) as { users: { user: { token: string } }[] }).users[0]!.user.token;
    for (const out of [coordinator.stdout, coordinator.stderr, member.stdout, member.stderr]) expect(out).not.toContain(token);
  });

  it('doctor: an identity bound to nothing cannot list, and every permission is reported missing', async () => {
    const nobody = await serviceAccountKubeconfig(namespace, 'nobody');
    const r = await run(['doctor', '--role', 'member', '-t', 'kubernetes', '-o', `kubernetes.kubeconfig=${nobody}`, '-o', `kubernetes.namespace=${namespace}`]);
    expect(r.code, r.stdout + r.stderr).toBe(8);
    expect(r.stdout).toMatch(/^FAIL +connection +PERMISSION_DENIED: /m);
    expect(r.stdout).toMatch(new RegExp(`^FAIL +permissions +role member: missing in namespace ${namespace}: get leases.coordination.k8s.io, list leases.coordination.k8s.io, watch leases.coordination.k8s.io, create leases.coordination.k8s.io, patch leases.coordination.k8s.io, delete leases.coordination.k8s.io; granted by the member manifest: rollcall manifests --role member --namespace ${namespace} \\| kubectl apply -f -`, 'm'));
  });
});
