import { readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { leaseAdmissionManifest, leaseAdmissionPolicies } from '../src/index.js';

const SHIPPED = new URL('../../../deploy/kubernetes/rollcall-admission.yaml', import.meta.url);

describe('the Lease admission policies as a manifest', () => {
  it('deploy/kubernetes/rollcall-admission.yaml is what leaseAdmissionManifest() generates (regenerate: npx nx run @rollcall/kubernetes:admission-manifest)', () => {
    expect(readFileSync(SHIPPED, 'utf8')).toBe(leaseAdmissionManifest());
  });

  it('the YAML reads back as the generated objects, CEL expressions and messages unchanged', () => {
    const options = { namePrefix: 'x', namespaceSelector: { matchLabels: { 'a.b/c': 'true' } }, memberAccount: 'm', holderAccounts: ['c'] };
    expect(loadAllYaml(leaseAdmissionManifest(options))).toEqual(leaseAdmissionPolicies(options));
    expect(loadAllYaml(leaseAdmissionManifest())).toEqual(leaseAdmissionPolicies());
  });
});
