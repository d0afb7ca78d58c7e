import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admissionPolicyBinding, celString, manifestYaml, serviceAccountCondition, validatingAdmissionPolicy } from '../src/index.js';

describe('manifestYaml', () => {
  it('reads back as the same documents, whatever a string looks like to YAML', () => {
    const tricky = ['', 'true', 'no', 'null', '~', '1', '0x1F', '1e3', '-', '*', '# x', 'a: b', 'a #b', ' lead', 'trail ', "it's", '"q"', 'x\ny', 'x\n', '\tx\ny', 'a\n\nb', '[a]', '{a}', '@a', '`a`', '!a', '&a', '%a', '|a', '>a', 'rollcall.dev/kind', 'é ü'];
    const docs = [{ kind: 'X', strings: tricky, keyed: Object.fromEntries(tricky.filter(Boolean).map((s, i) => [s, i])) }, { empty: [], none: {}, n: 0, f: false, nul: null, nested: [[1, 2], [{ a: [] }], { b: { c: 'd\ne' } }] }];
    expect(loadAllYaml(manifestYaml(docs))).toEqual(docs);
  });

  it('writes a multi-line string as a literal block, as people review CEL', () => {
    expect(manifestYaml([{ spec: { expression: "a == 'x'\n|| b" } }])).toBe("spec:\n  expression: |-\n    a == 'x'\n    || b\n");
  });
});

describe('admission-policy builders', () => {
  it('quote CEL strings and name service accounts in any namespace', () => {
    expect(celString("a'b\\c")).toBe("'a\\'b\\\\c'");
    expect(serviceAccountCondition(['m', 'c'])).toBe("request.userInfo.username.startsWith('system:serviceaccount:') && (request.userInfo.username.endsWith(':m') || request.userInfo.username.endsWith(':c'))");
  });

  it('build a Deny binding by namespace selector, and a policy that fails closed and refuses with 403', () => {
    const policy = validatingAdmissionPolicy({ name: 'p', resources: [{ apiGroups: [''], resources: ['pods'], operations: ['CREATE'] }], matchConditions: [{ name: 'who', expression: 'true' }], rules: [{ expression: 'false', message: 'no' }] });
    expect(policy).toMatchObject({ spec: { failurePolicy: 'Fail', validations: [{ expression: 'false', message: 'no', reason: 'Forbidden' }] } });
    expect(policy.spec).not.toHaveProperty('variables');
    expect(admissionPolicyBinding('p', { matchLabels: { a: 'b' } })).toEqual({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'p' }, spec: { policyName: 'p', validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { a: 'b' } } } } });
  });
});
