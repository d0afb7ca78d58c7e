/**
 * Builders of admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies (GA
 * since Kubernetes 1.30) and their bindings: the shape every policy Rollcall
 * ships shares (the Lease policies of `@rollcall/kubernetes`, the pod runner's),
 * so each policy states only whose requests it judges and its CEL rules.
 */

/** An admission operation a policy judges. A PATCH arrives as UPDATE. */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** The requests a policy judges: one resource rule of `matchConstraints`. */
export interface AdmissionResources {
  /** API groups, `''` for the core group. */
  apiGroups: string[];
  /** Plural resource names, as in RBAC. */
  resources: string[];
  operations: AdmissionOperation[];
}

/** One CEL rule: it must hold, or the request is refused with `message`. */
export interface AdmissionRule {
  /** A CEL expression over `request`, `object`, `oldObject` and the policy's `variables`. On DELETE `object` is null; on CREATE `oldObject` is. */
  expression: string;
  /** What a refusal says, after the API server's `ValidatingAdmissionPolicy '<name>' with binding '<binding>' denied request: `. */
  message: string;
}

/** A named CEL value the rules share (`variables.<name>`), evaluated lazily. */
export interface AdmissionVariable {
  name: string;
  expression: string;
}

export interface AdmissionPolicyOptions {
  /** The policy's name (cluster-scoped). */
  name: string;
  resources: AdmissionResources[];
  /** CEL conditions that must all hold for the policy to judge a request at all (who sends it, usually). */
  matchConditions: { name: string; expression: string }[];
  variables?: AdmissionVariable[];
  rules: AdmissionRule[];
  /** The kind of the parameter objects the rules read as `params` (a binding's `paramRef` selects them). Default none. */
  paramKind?: { apiVersion: string; kind: string };
}

/**
 * Which parameter objects a binding hands its policy. Every object the selector
 * matches is evaluated and the results ANDed; with `namespace` unset, a
 * namespaced request's own namespace is searched.
 */
export interface AdmissionParamRef {
  selector: LabelSelector;
  /** `Deny` fails closed when the selector matches nothing; `Allow` lets the request through. */
  parameterNotFoundAction: 'Deny' | 'Allow';
}

/** A label selector, as in `matchResources.namespaceSelector`. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/**
 * A ValidatingAdmissionPolicy. `failurePolicy: Fail`: a rule that cannot be
 * evaluated (an expression error) refuses the request rather than waving it
 * through. Every refusal answers 403 Forbidden.
 */
export function validatingAdmissionPolicy(options: AdmissionPolicyOptions): Record<string, unknown> {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: options.name },
    spec: {
      failurePolicy: 'Fail',
      ...(options.paramKind ? { paramKind: options.paramKind } : {}),
      matchConstraints: { resourceRules: options.resources.map((r) => ({ apiGroups: r.apiGroups, apiVersions: ['*'], resources: r.resources, operations: r.operations })) },
      matchConditions: options.matchConditions,
      ...(options.variables?.length ? { variables: options.variables } : {}),
      // Forbidden (403), not the default Invalid (422): a refusal is a permission the account lacks, as RBAC's.
      validations: options.rules.map((r) => ({ expression: r.expression, message: r.message, reason: 'Forbidden' })),
    },
  };
}

/** What a binding is named and selects beyond its namespaces. */
export interface AdmissionBindingOptions {
  /** The binding's name. Default the policy's. */
  name?: string;
  /** The parameters handed to the policy (a policy with a `paramKind` needs them). */
  paramRef?: AdmissionParamRef;
  /**
   * Only objects with these labels (the stored object's too, on UPDATE and
   * DELETE) are judged. Matched before the parameters are looked up, unlike a
   * policy's matchConditions: a binding with `parameterNotFoundAction: Deny`
   * then refuses nothing it does not select.
   */
  objectSelector?: LabelSelector;
}

/** The binding that enforces `policy` (action Deny) in the namespaces `namespaceSelector` selects. */
export function admissionPolicyBinding(policy: string, namespaceSelector: LabelSelector, options: AdmissionBindingOptions = {}): Record<string, unknown> {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: options.name ?? policy },
    spec: {
      policyName: policy,
      ...(options.paramRef ? { paramRef: options.paramRef } : {}),
      validationActions: ['Deny'],
      matchResources: { namespaceSelector, ...(options.objectSelector ? { objectSelector: options.objectSelector } : {}) },
    },
  };
}

/** A CEL string literal. */
export function celString(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * A CEL condition: the request is made by a service account named one of
 * `names`, in any namespace (`system:serviceaccount:<ns>:<name>`; neither part
 * can hold a colon), so one cluster-scoped policy serves every namespace it is
 * bound in.
 */
export function serviceAccountCondition(names: readonly string[]): string {
  const user = 'request.userInfo.username';
  return `${user}.startsWith('system:serviceaccount:') && (${names.map((n) => `${user}.endsWith(${celString(`:${n}`)})`).join(' || ')})`;
}
