import { readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podRunnerAdmissionManifest, podRunnerAdmissionPolicies } from '../../src/index.js';

const SHIPPED = new URL('../../../../deploy/kubernetes/rollcall-pod-runner-admission.yaml', import.meta.url);

describe("the pod runner's admission policies as a manifest", () => {
  it('deploy/kubernetes/rollcall-pod-runner-admission.yaml is what podRunnerAdmissionManifest() generates (regenerate: npx nx run @rollcall/pod-runner:admission-manifest)', () => {
    expect(readFileSync(SHIPPED, 'utf8')).toBe(podRunnerAdmissionManifest());
  });

  it('the YAML reads back as the generated objects', () => {
    const options = { namePrefix: 'x', namespaceSelector: { matchLabels: { a: 'b' } }, runnerAccount: 'r', serviceAccounts: ['a', "b'c"] };
    expect(loadAllYaml(podRunnerAdmissionManifest(options))).toEqual(podRunnerAdmissionPolicies(options));
    expect(loadAllYaml(podRunnerAdmissionManifest())).toEqual(podRunnerAdmissionPolicies());
  });
});
