import { CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml, PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { fencingPolicy, FENCING_NAMESPACE_LABEL } from '@rollcall/pod-runner';
import { KubeAdmin, readTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from './cli.js';

// The real API server of tools/ (ValidatingAdmissionPolicy served). The shipped policy names, bound only to
// namespaces labelled with this suite's own value, so no other suite's namespace is judged. The params policy
// is replaced, never deleted: an API server drops a paramKind's informer for good once no binding names it
// (kubernetes#130887). Only the term Lease policy (no params) is deleted and made again.
const kube = readTestEnv().kubernetes!;
const kc = new KubeConfig();
kc.loadFromFile(kube.kubeconfig);
const objects = KubernetesObjectApi.makeApiClient(kc);
const SUITE = 'doctor-fencing-suite';
const POLICIES = fencingPolicy({ namespaceSelector: { matchLabels: { [FENCING_NAMESPACE_LABEL]: SUITE } } }) as unknown as KubernetesObject[];
let namespace: string;

interface Check {
  name: string;
  status: string;
  detail: string;
  fix?: string;
}

async function fencing(kubeconfig = kube.kubeconfig): Promise<{ code: number | null; check: Check | undefined; stdout: string }> {
  const r = await run(['doctor', '--json', '--role', 'pod-runner', '-t', 'kubernetes', '-c', 'doctor', '-o', `kubernetes.kubeconfig=${kubeconfig}`, '-o', `kubernetes.namespace=${namespace}`]);
  const report = JSON.parse(r.stdout) as { checks: Check[] };
  return { code: r.code, check: report.checks.find((c) => c.name === 'fencing'), stdout: r.stdout };
}

async function createOrReplace(doc: KubernetesObject): Promise<void> {
  const stored = await objects.read(doc as never).catch(() => undefined);
  if (!stored) await objects.create(doc);
  else await objects.replace({ ...doc, metadata: { ...doc.metadata, resourceVersion: stored.metadata!.resourceVersion } });
}

beforeAll(async () => {
  namespace = await new KubeAdmin().namespace('doctor-fence');
  for (const doc of POLICIES) await createOrReplace(doc);
});

afterAll(async () => {
  if (namespace) await kc.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace }).catch(() => {});
});

describe('doctor --role pod-runner: the fencing policy', () => {
  it('the policies doctor looks for are those `rollcall manifests --role pod-runner --fencing` prints', async () => {
    const printed = await run(['manifests', '--role', 'pod-runner', '--fencing']);
    const pairs = (docs: KubernetesObject[]) => docs.filter((d) => d.kind === 'ValidatingAdmissionPolicyBinding').map((d) => `${(d as { spec: { policyName: string } }).spec.policyName}/${d.metadata!.name!}`);
    expect(pairs(loadAllYaml(printed.stdout) as KubernetesObject[])).toEqual(['rollcall-pod-runner-fencing/rollcall-pod-runner-fencing', 'rollcall-pod-runner-fencing/rollcall-pod-runner-fencing-records', 'rollcall-pod-runner-term/rollcall-pod-runner-term']);
    expect(pairs(POLICIES)).toEqual(pairs(loadAllYaml(printed.stdout) as KubernetesObject[]));
  });

  it('not binding the namespace, one missing, binding it: client-only fencing warned with the fix, then ok; an account that may not read them is told so', async () => {
    const fix = `rollcall manifests --role pod-runner --fencing --namespace ${namespace} | kubectl apply -f - (as a cluster admin: the policies, and the namespace's label rollcall.dev/pod-runner-fencing=enabled)`;
    const unlabelled = await fencing();
    expect(unlabelled.check, unlabelled.stdout).toMatchObject({ status: 'warn', fix });
    expect(unlabelled.check!.detail).toMatch(new RegExp(`^fencing is client-only in namespace ${namespace}: the server does not refuse a deposed runner term's writes: `));
    expect(unlabelled.check!.detail).toContain(`binding rollcall-pod-runner-fencing does not select namespace ${namespace} (it selects ${FENCING_NAMESPACE_LABEL}=${SUITE}; label the namespace, e.g. kubectl label namespace ${namespace} ${FENCING_NAMESPACE_LABEL}=enabled)`);

    await kc.makeApiClient(CoreV1Api).patchNamespace({ name: namespace, body: { metadata: { labels: { [FENCING_NAMESPACE_LABEL]: SUITE } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    const bound = await fencing();
    expect(bound.code, bound.stdout).toBe(0);
    expect(bound.check).toEqual({ name: 'fencing', status: 'ok', detail: `policies rollcall-pod-runner-fencing, rollcall-pod-runner-term exist and their bindings deny a deposed runner term's writes in namespace ${namespace}` });

    // the term Lease's policy (no params) gone: warned as missing; doctor still passes (the policy is opt-in)
    const termPolicy = POLICIES.find((d) => d.kind === 'ValidatingAdmissionPolicy' && d.metadata!.name === 'rollcall-pod-runner-term');
    const termBinding = POLICIES.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding' && d.metadata!.name === 'rollcall-pod-runner-term');
    await objects.delete(termBinding!);
    await objects.delete(termPolicy!);
    try {
      const missing = await fencing();
      expect(missing.code, missing.stdout).toBe(0);
      expect(missing.check).toMatchObject({ status: 'warn', fix });
      expect(missing.check!.detail).toContain('policy rollcall-pod-runner-term does not exist');
      expect(missing.check!.detail).not.toContain('rollcall-pod-runner-fencing');
    } finally {
      await createOrReplace(termPolicy!);
      await createOrReplace(termBinding!);
    }

    // the runner's own account may not read cluster-scoped policies: skipped, saying where else to tell
    const printed = await run(['manifests', '--role', 'pod-runner', '--namespace', namespace]);
    for (const doc of loadAllYaml(printed.stdout) as KubernetesObject[]) await objects.create(doc);
    const refused = await fencing(await serviceAccountKubeconfig(namespace, 'rollcall-pod-runner'));
    expect(refused.check).toMatchObject({ status: 'skip' });
    expect(refused.check!.detail).toContain('fencing not enforced by the server');
  });
});
