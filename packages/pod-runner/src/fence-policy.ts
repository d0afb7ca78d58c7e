import { admissionPolicyBinding, celString, manifestYaml, serviceAccountCondition, validatingAdmissionPolicy, type LabelSelector } from '@rollcall/kube-client';
import { RUNNER_LABEL } from './pod.js';
import { CANCEL_REQUESTED_ANNOTATION, SUBMIT_REQUESTED_ANNOTATION, TASK_RECORD_LABEL, TASK_STATE_LABEL, WRITE_TERM_ANNOTATION } from './task-record.js';

/** Label on a runner's term Lease, its value the runner's name: the fencing policy's params are the Leases carrying it. */
export const TERM_LEASE_LABEL = 'rollcall.dev/runner-term';
/** The term Lease of a runner, in its pods' namespace: `spec.leaseTransitions` is the term that may write. */
export const termLeaseName = (runner: string) => `pod-runner-${runner}-term`;

/** The namespace label that opts a namespace into the shipped fencing policy (its value `enabled`). */
export const FENCING_NAMESPACE_LABEL = 'rollcall.dev/pod-runner-fencing';

/** What {@link fencingPolicy} generates; every field has the shipped file's default. */
export interface FencingPolicyOptions {
  /** The start of both policies' and bindings' names (cluster-scoped objects). Default `rollcall`. */
  namePrefix?: string;
  /** The namespaces the fence is enforced in. Default: those labelled `rollcall.dev/pod-runner-fencing=enabled`. */
  namespaceSelector?: LabelSelector;
  /** The runners' ServiceAccount names, in any namespace: only their requests are judged. Default `['rollcall-pod-runner']`. */
  runnerAccounts?: string[];
}

/** The part of every fence refusal's message that names it: what the term's probe looks for. */
export const STALE_TERM_MESSAGE = 'writes task pods and records only in its runner\'s current term';

const REQUESTS = [CANCEL_REQUESTED_ANNOTATION, SUBMIT_REQUESTED_ANNOTATION].map(celString).join(', ');
const labelled = (o: string) => `has(${o}.metadata.labels) && (${celString(RUNNER_LABEL)} in ${o}.metadata.labels || ${celString(TASK_RECORD_LABEL)} in ${o}.metadata.labels)`;
const label = (o: string, key: string) => `(has(${o}.metadata.labels) && ${celString(key)} in ${o}.metadata.labels ? ${o}.metadata.labels[${celString(key)}] : '')`;
/** Both absent, or both present and equal. */
const same = (field: string) => `has(object.${field}) == has(oldObject.${field}) && (!has(object.${field}) || object.${field} == oldObject.${field})`;
const term = (o: string) => `(has(${o}.spec.leaseTransitions) ? ${o}.spec.leaseTransitions : 0)`;

/**
 * The server-side fence of the pod runner's writes, for a cluster admin: two
 * cluster-scoped ValidatingAdmissionPolicies and their bindings (Kubernetes
 * >= 1.30, failurePolicy Fail), judging only the runner accounts' requests
 * and, through the bindings' object selectors, only objects carrying the
 * runner's labels (a namespace opted in before its first runner started
 * refuses nobody else's writes).
 *
 * - Writes: a CREATE, UPDATE or DELETE of a pod or ConfigMap labelled
 *   `rollcall.dev/runner` or `rollcall.dev/task-record` passes only when its
 *   `rollcall.dev/write-term` (the stored object's, on DELETE) equals the
 *   `spec.leaseTransitions` of its runner's term Lease, the param (a Lease
 *   labelled `rollcall.dev/runner-term`, searched in the request's namespace;
 *   none at all refuses). Unfenced: a CREATE of a `queued` record (a submit),
 *   and a record UPDATE that only adds or changes the request annotations.
 * - The term Lease: a runner account creates it only at term 0 under its
 *   name, may only raise the term, and may not delete it.
 *
 * `spec.leaseTransitions` holds the term: an integer CEL compares without
 * parsing, and it already means "leadership changed hands" (a Kubernetes
 * registry's token is that field). It is an int32: terms stop at 2^31 − 1.
 */
export function fencingPolicy(options: FencingPolicyOptions = {}): Record<string, unknown>[] {
  const prefix = options.namePrefix ?? 'rollcall';
  const selector = options.namespaceSelector ?? { matchLabels: { [FENCING_NAMESPACE_LABEL]: 'enabled' } };
  const accounts = options.runnerAccounts ?? ['rollcall-pod-runner'];
  const who = accounts.join(', ');
  const account = { name: 'rollcall-pod-runner', expression: serviceAccountCondition(accounts) };
  const writes = `${prefix}-pod-runner-fencing`;
  const leases = `${prefix}-pod-runner-term`;
  const newAnnotations = 'object.metadata.annotations';
  const oldAnnotations = 'oldObject.metadata.annotations';
  return [
    validatingAdmissionPolicy({
      name: writes,
      paramKind: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease' },
      resources: [{ apiGroups: [''], resources: ['pods', 'configmaps'], operations: ['CREATE', 'UPDATE', 'DELETE'] }],
      matchConditions: [account, { name: 'rollcall-task-object', expression: `(request.operation != 'DELETE' && ${labelled('object')}) || (request.operation != 'CREATE' && ${labelled('oldObject')})` }],
      variables: [
        // Whose object: the stored one's runner, so a write that drops or changes the label is still judged by the owner's term.
        // A pod carries the runner label, a record the task-record label: one of the two is empty.
        { name: 'owner', expression: `request.operation == 'CREATE' ? object : oldObject` },
        { name: 'runner', expression: `${label('variables.owner', RUNNER_LABEL)} + ${label('variables.owner', TASK_RECORD_LABEL)}` },
        // The term that writes: the new object's stamp, or on DELETE the stored object's (its last writer).
        { name: 'written', expression: `request.operation == 'DELETE' ? oldObject : object` },
        { name: 'term', expression: `has(variables.written.metadata.annotations) && ${celString(WRITE_TERM_ANNOTATION)} in variables.written.metadata.annotations ? variables.written.metadata.annotations[${celString(WRITE_TERM_ANNOTATION)}] : ''` },
        { name: 'record', expression: `request.resource.resource == 'configmaps'` },
        { name: 'submit', expression: `request.operation == 'CREATE' && variables.record && ${label('object', TASK_STATE_LABEL)} == 'queued'` },
        {
          name: 'requestOnly',
          // Data, labels and finalizers unchanged; every other annotation unchanged; no request annotation removed (only the leader clears one, in its term).
          expression: [
            `request.operation == 'UPDATE' && variables.record`,
            same('data'), same('binaryData'), same('metadata.labels'), same('metadata.finalizers'),
            `(!has(${oldAnnotations}) || ${oldAnnotations}.all(k, (k in [${REQUESTS}] && has(${newAnnotations}) && k in ${newAnnotations}) || (has(${newAnnotations}) && k in ${newAnnotations} && ${newAnnotations}[k] == ${oldAnnotations}[k])))`,
            `(!has(${newAnnotations}) || ${newAnnotations}.all(k, k in [${REQUESTS}] || (has(${oldAnnotations}) && k in ${oldAnnotations})))`,
          ].join(' && '),
        },
      ],
      rules: [
        {
          // Each term Lease of the namespace is a param, ANDed: only the object's own runner's Lease judges it.
          expression: `params.metadata.labels[${celString(TERM_LEASE_LABEL)}] != variables.runner || variables.submit || variables.requestOnly || variables.term == string(${term('params')})`,
          message: `${who} ${STALE_TERM_MESSAGE}: the object's ${WRITE_TERM_ANNOTATION} must equal its term Lease's spec.leaseTransitions`,
        },
      ],
    }),
    // One binding per label: a binding's objectSelector is matched before its params are looked up (matchConditions
    // after), so in a namespace with no term Lease yet only the runner's own pods and records are refused, not everyone's.
    ...[RUNNER_LABEL, TASK_RECORD_LABEL].map((key, i) =>
      admissionPolicyBinding(writes, selector, {
        name: i === 0 ? writes : `${writes}-records`,
        paramRef: { selector: { matchExpressions: [{ key: TERM_LEASE_LABEL, operator: 'Exists' }] }, parameterNotFoundAction: 'Deny' },
        objectSelector: { matchExpressions: [{ key, operator: 'Exists' }] },
      }),
    ),
    validatingAdmissionPolicy({
      name: leases,
      resources: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], operations: ['CREATE', 'UPDATE', 'DELETE'] }],
      matchConditions: [account, { name: 'rollcall-term-lease', expression: `(request.operation != 'DELETE' && ${label('object', TERM_LEASE_LABEL)} != '') || (request.operation != 'CREATE' && ${label('oldObject', TERM_LEASE_LABEL)} != '')` }],
      rules: [
        {
          expression: `request.operation != 'CREATE' || (${term('object')} == 0 && object.metadata.name == ${celString(termLeaseName('\u0000').split('\u0000')[0]!)} + ${label('object', TERM_LEASE_LABEL)} + ${celString(termLeaseName('\u0000').split('\u0000')[1]!)})`,
          message: `${who} creates a term Lease only at term 0, named ${termLeaseName('<runner>')} after its ${TERM_LEASE_LABEL} label`,
        },
        {
          expression: `request.operation != 'UPDATE' || (${label('object', TERM_LEASE_LABEL)} == ${label('oldObject', TERM_LEASE_LABEL)} && ${term('object')} > ${term('oldObject')})`,
          message: `${who} may only raise a term Lease's spec.leaseTransitions, keeping its ${TERM_LEASE_LABEL} label`,
        },
        { expression: `request.operation != 'DELETE'`, message: `${who} may not delete a term Lease` },
      ],
    }),
    admissionPolicyBinding(leases, selector),
  ];
}

const HEADER = `# Generated by fencingPolicy() in packages/pod-runner/src/fence-policy.ts: do not edit;
# regenerate with \`npx nx run @rollcall/pod-runner:fencing-manifest\` (a test checks this file against it).
# Needs Kubernetes >= 1.30 and a cluster admin (policies and bindings are cluster-scoped).
# Enforced in the namespaces labelled ${FENCING_NAMESPACE_LABEL}=enabled, for the second-generation
# runner (it stamps ${WRITE_TERM_ANNOTATION}; an older runner's writes are refused there). See the
# pod runner's README, "Fencing", for what it closes and the window it leaves.
`;

/** The shipped deploy/kubernetes/rollcall-pod-runner-fencing.yaml: {@link fencingPolicy} with its defaults, as YAML. */
export function fencingManifest(options: FencingPolicyOptions = {}): string {
  return HEADER + manifestYaml(fencingPolicy(options));
}
