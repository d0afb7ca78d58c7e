import { readdirSync, readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { run } from './cli.js';

const DEPLOY = new URL('../../../deploy/kubernetes/', import.meta.url);
const SHIPPED = new URL('../dist/manifests/', import.meta.url);
const shippedFiles = () => readdirSync(DEPLOY).filter((f) => /^rollcall-.+\.yaml$/.test(f)).sort();
const ROLES = shippedFiles().map((f) => /^rollcall-(.+)\.yaml$/.exec(f)![1]!).filter((r) => r !== 'configmap-lock' && r !== 'pod-liveness' && !r.endsWith('admission') && !r.endsWith('fencing'));

interface Doc {
  metadata?: { namespace?: string };
  subjects?: { namespace?: string }[];
}

/** The objects of a file as `kubectl apply -n <ns>` would create them: each in `ns`, its subjects bound there. */
function placed(text: string, namespace: string): Doc[] {
  return (loadAllYaml(text) as Doc[]).map((doc) => ({ ...doc, metadata: { ...doc.metadata, namespace }, ...(doc.subjects ? { subjects: doc.subjects.map((s) => ({ ...s, namespace })) } : {}) }));
}

describe('rollcall manifests', () => {
  it('the package carries every rollcall-*.yaml of deploy/kubernetes, byte for byte', () => {
    expect(readdirSync(SHIPPED).sort()).toEqual(shippedFiles());
    for (const file of shippedFiles()) expect(readFileSync(new URL(file, SHIPPED), 'utf8'), file).toBe(readFileSync(new URL(file, DEPLOY), 'utf8'));
    expect(ROLES).toEqual(expect.arrayContaining(['coordinator', 'member']));
  });

  it.each(ROLES)('--role %s prints that file, every object and subject in the namespace given', async (role) => {
    const r = await run(['manifests', '--role', role, '--namespace', 'prod']);
    expect(r.code, r.stderr).toBe(0);
    const printed = loadAllYaml(r.stdout) as Doc[];
    expect(printed).toEqual(placed(readFileSync(new URL(`rollcall-${role}.yaml`, DEPLOY), 'utf8'), 'prod'));
    expect(printed.length).toBeGreaterThan(0);
  });

  it.each(['coordinator', 'member'])('--role %s --lock configmap adds the ConfigMap Role bound to that role\'s account, and no other binding', async (role) => {
    const r = await run(['manifests', '--role', role, '--namespace', 'prod', '--lock', 'configmap']);
    expect(r.code, r.stderr).toBe(0);
    const file = (name: string) => readFileSync(new URL(`rollcall-${name}.yaml`, DEPLOY), 'utf8');
    const printed = loadAllYaml(r.stdout) as (Omit<Doc, 'subjects'> & { kind: string; subjects?: { name: string; namespace?: string }[] })[];
    const own = placed(file(role), 'prod');
    expect(printed.slice(0, own.length)).toEqual(own);
    const added = printed.slice(own.length);
    expect(added.map((d) => d.kind)).toEqual(['Role', 'RoleBinding']);
    expect(added[1]!.subjects!.map((s) => s.name)).toEqual([`rollcall-${role}`]);
    // Every binding printed is for the account the role's manifest creates.
    for (const d of printed.filter((d) => d.kind === 'RoleBinding')) expect(d.subjects!.map((s) => [s.name, s.namespace])).toEqual([[`rollcall-${role}`, 'prod']]);
  });

  it.each(['coordinator', 'member', 'viewer'])('--role %s --liveness pod adds the EndpointSlice reader Role bound to that role\'s account, and no other binding', async (role) => {
    const r = await run(['manifests', '--role', role, '--namespace', 'prod', '--liveness', 'pod']);
    expect(r.code, r.stderr).toBe(0);
    const file = (name: string) => readFileSync(new URL(`rollcall-${name}.yaml`, DEPLOY), 'utf8');
    const printed = loadAllYaml(r.stdout) as (Omit<Doc, 'subjects'> & { kind: string; rules?: { resources: string[]; verbs: string[] }[]; subjects?: { name: string; namespace?: string }[] })[];
    const own = placed(file(role), 'prod');
    expect(printed.slice(0, own.length)).toEqual(own);
    const added = printed.slice(own.length);
    expect(added.map((d) => d.kind)).toEqual(['Role', 'RoleBinding']);
    // Read-only, and endpointslices only: never pods.
    expect(added[0]!.rules).toEqual([{ apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] }]);
    expect(added[1]!.subjects!.map((s) => s.name)).toEqual([`rollcall-${role}`]);
    for (const d of printed.filter((d) => d.kind === 'RoleBinding')) expect(d.subjects!.map((s) => [s.name, s.namespace])).toEqual([[`rollcall-${role}`, 'prod']]);
  });

  it('--admission prints the shipped admission policies and bindings (the Leases\', then the pod runner\'s), cluster-scoped; with --namespace also that namespace labelled to opt in', async () => {
    const shipped = ['rollcall-admission.yaml', 'rollcall-pod-runner-admission.yaml'].map((f) => readFileSync(new URL(f, DEPLOY), 'utf8'));
    const bare = await run(['manifests', '--admission']);
    expect(bare.code, bare.stderr).toBe(0);
    const docs = loadAllYaml(bare.stdout) as { kind: string; metadata: { name: string; namespace?: string } }[];
    expect(docs).toEqual(shipped.flatMap((f) => loadAllYaml(f)));
    expect(docs.map((d) => d.kind)).toEqual(Array(4).fill(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']).flat());
    expect(docs.every((d) => d.metadata.namespace === undefined)).toBe(true);
    const opted = await run(['manifests', '--admission', '--namespace', 'prod']);
    expect(opted.code, opted.stderr).toBe(0);
    const all = loadAllYaml(opted.stdout);
    expect(all.slice(0, -1)).toEqual(docs);
    expect(all.at(-1)).toEqual({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'prod', labels: { 'rollcall.dev/admission': 'enabled' } } });
    const withRole = await run(['manifests', '--admission', '--role', 'member', '--namespace', 'prod']);
    expect(withRole.code).toBe(2);
    expect(withRole.stderr).toContain('--admission prints the cluster-scoped policies');
    expect(withRole.stdout).toBe('');
  });

  it('--role pod-runner --fencing prints the shipped fencing policies and bindings, cluster-scoped; with --namespace also that namespace labelled to opt in', async () => {
    const shipped = loadAllYaml(readFileSync(new URL('rollcall-pod-runner-fencing.yaml', DEPLOY), 'utf8'));
    const bare = await run(['manifests', '--role', 'pod-runner', '--fencing']);
    expect(bare.code, bare.stderr).toBe(0);
    const docs = loadAllYaml(bare.stdout) as { kind: string; metadata: { namespace?: string } }[];
    expect(docs).toEqual(shipped);
    // the writes policy has a binding per runner label (pods, records), the term Lease policy one
    expect(docs.map((d) => d.kind)).toEqual(['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
    expect(docs.every((d) => d.metadata.namespace === undefined)).toBe(true);
    const opted = await run(['manifests', '--role', 'pod-runner', '--fencing', '--namespace', 'prod']);
    expect(opted.code, opted.stderr).toBe(0);
    const all = loadAllYaml(opted.stdout);
    expect(all.slice(0, -1)).toEqual(docs);
    expect(all.at(-1)).toEqual({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'prod', labels: { 'rollcall.dev/pod-runner-fencing': 'enabled' } } });
    for (const args of [['--role', 'member', '--fencing'], ['--fencing'], ['--admission', '--fencing']]) {
      const refused = await run(['manifests', ...args]);
      expect(refused.code, args.join(' ')).toBe(2);
      expect(refused.stdout).toBe('');
    }
  });

  it('an unknown role or a bad namespace is a usage error naming what is allowed (exit 2)', async () => {
    const role = await run(['manifests', '--role', 'admin', '--namespace', 'prod']);
    expect(role.code).toBe(2);
    expect(role.stderr).toContain(ROLES.join(', '));
    const namespace = await run(['manifests', '--role', 'member', '--namespace', 'Prod_1']);
    expect(namespace.code).toBe(2);
    expect(namespace.stderr).toMatch(/--namespace "Prod_1": expected a namespace name/);
    const missing = await run(['manifests', '--role', 'member']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--namespace');
    const podLock = await run(['manifests', '--role', 'pod-runner', '--namespace', 'prod', '--lock', 'configmap']);
    expect(podLock.code).toBe(2);
    expect(podLock.stderr).toContain('--lock configmap: the ConfigMap lock is the registry\'s');
    expect(podLock.stdout).toBe('');
  });
});
