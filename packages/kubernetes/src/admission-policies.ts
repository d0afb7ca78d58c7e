import { admissionPolicyBinding, celString, manifestYaml, serviceAccountCondition, validatingAdmissionPolicy, type AdmissionRule, type LabelSelector } from '@rollcall/kube-client';
import { CLUSTER_LABEL, KEY_ANNOTATION, KIND_LABEL } from './codec.js';

/** The namespace label that opts a namespace into the Lease policies: `rollcall.dev/admission=enabled`. */
export const ADMISSION_LABEL = 'rollcall.dev/admission';

/** What {@link leaseAdmissionPolicies} generates; every field has the shipped file's default. */
export interface LeaseAdmissionOptions {
  /** The start of every policy and binding name (cluster-scoped objects). Default `rollcall`. */
  namePrefix?: string;
  /** The namespaces the policies are enforced in. Default: those labelled `rollcall.dev/admission=enabled`. */
  namespaceSelector?: LabelSelector;
  /** The announce-only account's ServiceAccount name, in any namespace. Default `rollcall-member`. */
  memberAccount?: string;
  /** Accounts that also campaign and lock. Default `rollcall-coordinator` and `rollcall-pod-runner` (its runner election). */
  holderAccounts?: string[];
}

const MEMBER_KINDS = ['member', 'heartbeat'];
// A leader's failover records (`registry.failover`) are written by the coordinator, never by a member.
const ALL_KINDS = [...MEMBER_KINDS, 'election', 'lock', 'failover'];

const list = (items: readonly string[]) => `[${items.map(celString).join(', ')}]`;
const label = (o: string, name: string) => `${o}.metadata.labels[${celString(name)}]`;
const annotation = (o: string, name: string) => `${o}.metadata.annotations[${celString(name)}]`;

/**
 * The kind of `o` when it is a Rollcall record — a kind label Rollcall writes,
 * a cluster label, and a key annotation under that kind — else `''`.
 */
function recordKind(o: string): string {
  return [
    `has(${o}.metadata.labels) && has(${o}.metadata.annotations)`,
    `&& ${celString(KIND_LABEL)} in ${o}.metadata.labels && ${label(o, KIND_LABEL)} in ${list(ALL_KINDS)}`,
    `&& ${celString(CLUSTER_LABEL)} in ${o}.metadata.labels && ${label(o, CLUSTER_LABEL)} != ''`,
    `&& ${celString(KEY_ANNOTATION)} in ${o}.metadata.annotations && ${annotation(o, KEY_ANNOTATION)}.startsWith(${label(o, KIND_LABEL)} + '/')`,
    `? ${label(o, KIND_LABEL)} : ''`,
  ].join('\n');
}

const holder = (o: string) => `has(${o}.spec) && has(${o}.spec.holderIdentity) ? ${o}.spec.holderIdentity : ''`;

/** The variables every rule reads: each object's record kind (`''` when absent or not Rollcall's) and holder. */
const VARIABLES = [
  { name: 'kind', expression: `request.operation == 'DELETE' ? '' : (${recordKind('object')})` },
  { name: 'oldKind', expression: `request.operation == 'CREATE' ? '' : (${recordKind('oldObject')})` },
  { name: 'holder', expression: holder('object') },
  { name: 'oldHolder', expression: holder('oldObject') },
];

/** The rules of an account that may write Rollcall Leases of `kinds`. */
function leaseRules(account: string, kinds: readonly string[], what: string): AdmissionRule[] {
  const memberKinds = list(MEMBER_KINDS);
  return [
    {
      // The stored object first: relabelling a Lease cannot bring it within reach, and a refused change says why.
      expression: `request.operation == 'CREATE' || variables.oldKind in ${list(kinds)}`,
      message: `${account} may change or delete only Leases that already are Rollcall ${what} Leases`,
    },
    {
      expression: `request.operation == 'DELETE' || variables.kind in ${list(kinds)}`,
      message: `${account} may write only Rollcall ${what} Leases: labels ${KIND_LABEL} (${kinds.join(', ')}) and ${CLUSTER_LABEL}, and an annotation ${KEY_ANNOTATION} under that kind`,
    },
    {
      expression: [
        `request.operation != 'UPDATE' || variables.kind == '' || variables.oldKind == ''`,
        `|| (variables.kind == variables.oldKind && ${label('object', CLUSTER_LABEL)} == ${label('oldObject', CLUSTER_LABEL)}`,
        `&& ${annotation('object', KEY_ANNOTATION)} == ${annotation('oldObject', KEY_ANNOTATION)})`,
      ].join('\n'),
      message: `a Rollcall Lease keeps its ${KIND_LABEL}, ${CLUSTER_LABEL} and ${KEY_ANNOTATION}`,
    },
    {
      // Every registry that writes marks an expired member (holder cleared) before deleting it; a member marked while alive writes itself back.
      expression: [
        `request.operation != 'UPDATE' || !(variables.oldKind in ${memberKinds}) || variables.holder == variables.oldHolder || variables.holder == ''`,
        `|| (variables.oldHolder == '' && ${annotation('object', KEY_ANNOTATION)}.endsWith('/' + variables.holder))`,
      ].join('\n'),
      message: `${account} may change the spec.holderIdentity of a member or heartbeat Lease only to clear it (the expiry mark) or to set a cleared one back to the member its key names`,
    },
  ];
}

function policy(name: string, accounts: readonly string[], account: string, kinds: readonly string[], what: string) {
  return validatingAdmissionPolicy({
    name,
    resources: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], operations: ['CREATE', 'UPDATE', 'DELETE'] }],
    matchConditions: [{ name: 'rollcall-accounts', expression: serviceAccountCondition(accounts) }],
    variables: VARIABLES,
    rules: leaseRules(account, kinds, what),
  });
}

/**
 * The ValidatingAdmissionPolicies (and their bindings) that confine Rollcall's
 * accounts to their own Leases on the server: the member account writes only
 * member and heartbeat Leases and never takes a holder; the accounts that
 * campaign write elections and locks as well; none reaches a Lease that is not
 * Rollcall's, before or after the write.
 */
export function leaseAdmissionPolicies(options: LeaseAdmissionOptions = {}): Record<string, unknown>[] {
  const prefix = options.namePrefix ?? 'rollcall';
  const selector = options.namespaceSelector ?? { matchLabels: { [ADMISSION_LABEL]: 'enabled' } };
  const member = options.memberAccount ?? 'rollcall-member';
  const holders = options.holderAccounts ?? ['rollcall-coordinator', 'rollcall-pod-runner'];
  const memberPolicy = `${prefix}-member-leases`;
  const holderPolicy = `${prefix}-holder-leases`;
  return [
    policy(memberPolicy, [member], member, MEMBER_KINDS, 'member or heartbeat'),
    admissionPolicyBinding(memberPolicy, selector),
    policy(holderPolicy, holders, holders.join(' and '), ALL_KINDS, 'record'),
    admissionPolicyBinding(holderPolicy, selector),
  ];
}

const HEADER = `# Generated by leaseAdmissionPolicies() in packages/kubernetes/src/admission-policies.ts: do not edit;
# regenerate with \`npx nx run @rollcall/kubernetes:admission-manifest\` (a test checks this file against it).
# Needs Kubernetes >= 1.30 and a cluster admin (policies and bindings are cluster-scoped).
# Enforced only in the namespaces that opt in (see README.md):
#   kubectl apply -f rollcall-admission.yaml
#   kubectl label namespace <namespace> ${ADMISSION_LABEL}=enabled
# or both: rollcall manifests --admission --namespace <namespace> | kubectl apply -f -
`;

/** The shipped deploy/kubernetes/rollcall-admission.yaml: {@link leaseAdmissionPolicies} with its defaults, as YAML. */
export function leaseAdmissionManifest(options: LeaseAdmissionOptions = {}): string {
  return HEADER + manifestYaml(leaseAdmissionPolicies(options));
}
