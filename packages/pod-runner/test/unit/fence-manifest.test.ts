import { readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { fencingManifest, fencingPolicy } from '../../src/index.js';

const SHIPPED = new URL('../../../../deploy/kubernetes/rollcall-pod-runner-fencing.yaml', import.meta.url);

describe("the pod runner's fencing policy as a manifest", () => {
  it('deploy/kubernetes/rollcall-pod-runner-fencing.yaml is what fencingManifest() generates (regenerate: npx nx run @rollcall/pod-runner:fencing-manifest)', () => {
    expect(readFileSync(SHIPPED, 'utf8')).toBe(fencingManifest());
  });

  it('the YAML reads back as the generated objects', () => {
    const options = { namePrefix: 'x', namespaceSelector: { matchLabels: { a: 'b' } }, runnerAccounts: ['r', "o'k"] };
    expect(loadAllYaml(fencingManifest(options))).toEqual(fencingPolicy(options));
    expect(loadAllYaml(fencingManifest())).toEqual(fencingPolicy());
  });

  it('the binding fails closed: params are the term Leases of the request\'s namespace, none found is a refusal', () => {
    const binding = fencingPolicy()[1] as { spec: { paramRef: unknown } };
    expect(binding.spec.paramRef).toEqual({ selector: { matchExpressions: [{ key: 'rollcall.dev/runner-term', operator: 'Exists' }] }, parameterNotFoundAction: 'Deny' });
  });
});
