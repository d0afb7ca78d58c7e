import { CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml, PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { leaseAdmissionPolicies } from '@rollcall/kubernetes';
import { KubeAdmin, readTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selects } from '../src/commands/doctor.js';
import { run } from './cli.js';

// The real API server of tools/ (RBAC on, ValidatingAdmissionPolicy served), started by the global setup.
const kube = readTestEnv().kubernetes!;
const kc = new KubeConfig();
kc.loadFromFile(kube.kubeconfig);
const objects = KubernetesObjectApi.makeApiClient(kc);
/** The shipped policies' names, bound only to namespaces carrying this file's own label: no other test's namespace is judged by them. */
const LABEL = 'rollcall.dev/admission-doctor';
let namespace: string;
let policies: KubernetesObject[] = [];

interface Check {
  name: string;
  status: string;
  detail: string;
  fix?: string;
}

async function admission(kubeconfig: string, role = 'coordinator'): Promise<{ code: number | null; check: Check | undefined; stdout: string }> {
  const r = await run(['doctor', '--json', '--role', role, '-t', 'kubernetes', '-c', 'doctor', '-o', `kubernetes.kubeconfig=${kubeconfig}`, '-o', `kubernetes.namespace=${namespace}`]);
  const report = JSON.parse(r.stdout) as { checks: Check[] };
  return { code: r.code, check: report.checks.find((c) => c.name === 'admission'), stdout: r.stdout };
}

async function removePolicies(): Promise<void> {
  for (const doc of policies.slice().reverse()) await objects.delete(doc).catch(() => undefined);
}

beforeAll(async () => {
  namespace = await new KubeAdmin().namespace('doctor-vap');
  policies = leaseAdmissionPolicies({ namespaceSelector: { matchLabels: { [LABEL]: namespace } } }) as KubernetesObject[];
  // left over from a run that did not finish
  await removePolicies();
});

afterAll(async () => {
  await removePolicies();
  if (namespace) await kc.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace }).catch(() => {});
});

describe('doctor: the admission policies', () => {
  it('the policies doctor looks for are those `rollcall manifests --admission` prints, named as the builder names them by default', async () => {
    const printed = await run(['manifests', '--admission']);
    const bindings = (loadAllYaml(printed.stdout) as KubernetesObject[]).filter((d) => d.kind === 'ValidatingAdmissionPolicyBinding');
    const pairs = (docs: KubernetesObject[]) => docs.filter((d) => d.kind === 'ValidatingAdmissionPolicyBinding').map((d) => `${(d as { spec: { policyName: string } }).spec.policyName}/${d.metadata!.name!}`);
    expect(pairs(bindings)).toEqual([...pairs(policies), 'rollcall-pod-runner-pods/rollcall-pod-runner-pods', 'rollcall-pod-runner-configmaps/rollcall-pod-runner-configmaps']);
  });

  it('label selectors select as the API server does', () => {
    expect(selects(undefined, {})).toBe(true);
    expect(selects({ matchLabels: { a: '1' } }, { a: '1', b: '2' })).toBe(true);
    expect(selects({ matchLabels: { a: '1' } }, { a: '2' })).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'a', operator: 'In', values: ['1', '2'] }] }, { a: '2' })).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'a', operator: 'In', values: ['1'] }] }, {})).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] }, {})).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }, { a: '' })).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] }, { a: '' })).toBe(false);
  });

  it('missing, not binding the namespace, not denying, binding it: each reported as it is, read-only; an account that may not read them is told so', async () => {
    // none installed: a warning naming each, and the command that installs them; doctor still passes (they are opt-in)
    const none = await admission(kube.kubeconfig);
    expect(none.code, none.stdout).toBe(0);
    expect(none.check).toMatchObject({ status: 'warn', fix: `rollcall manifests --admission --namespace ${namespace} | kubectl apply -f - (as a cluster admin)` });
    expect(none.check!.detail).toContain('policy rollcall-member-leases does not exist; policy rollcall-holder-leases does not exist');

    for (const doc of policies) await objects.create(doc);
    const unlabelled = await admission(kube.kubeconfig);
    expect(unlabelled.check?.status).toBe('warn');
    expect(unlabelled.check!.detail).toContain(`binding rollcall-member-leases does not select namespace ${namespace} (it selects ${LABEL}=${namespace}`);

    await kc.makeApiClient(CoreV1Api).patchNamespace({ name: namespace, body: { metadata: { labels: { [LABEL]: namespace } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    const bound = await admission(kube.kubeconfig);
    expect(bound.check).toMatchObject({ status: 'ok', detail: `policies rollcall-member-leases, rollcall-holder-leases exist and their bindings deny in namespace ${namespace}` });

    // a binding that only warns confines nobody
    await objects.patch({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'rollcall-holder-leases' }, spec: { validationActions: ['Warn'] } } as KubernetesObject, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch);
    const warnOnly = await admission(kube.kubeconfig);
    expect(warnOnly.check?.status).toBe('warn');
    expect(warnOnly.check!.detail).toContain('binding rollcall-holder-leases does not deny (validationActions: Warn)');
    expect(warnOnly.check!.detail).not.toContain('rollcall-member-leases');

    // the member account's Role is namespaced: it may not read cluster-scoped policies, and doctor says what that leaves unknown
    const printed = await run(['manifests', '--role', 'member', '--namespace', namespace]);
    for (const doc of loadAllYaml(printed.stdout) as KubernetesObject[]) await objects.create(doc);
    const member = await serviceAccountKubeconfig(namespace, 'rollcall-member');
    const refused = await admission(member, 'member');
    expect(refused.code, refused.stdout).toBe(0);
    expect(refused.check).toMatchObject({ status: 'skip' });
    expect(refused.check!.detail).toContain(`this identity may not read validatingadmissionpolicies (cluster-scoped; the Rollcall Roles grant none), so whether rollcall-member-leases, rollcall-holder-leases bind namespace ${namespace} is unknown`);
  });
});
