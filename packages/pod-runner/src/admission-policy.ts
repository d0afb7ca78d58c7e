import { admissionPolicyBinding, celString, manifestYaml, serviceAccountCondition, validatingAdmissionPolicy, type LabelSelector } from '@rollcall/kube-client';
import { ledgerName } from './ledger-format.js';
import { RUNNER_LABEL } from './pod.js';
import { TASK_RECORD_LABEL } from './task-record.js';

/** What {@link podRunnerAdmissionPolicies} generates; every field has the shipped file's default. */
export interface PodRunnerAdmissionOptions {
  /** The start of every policy and binding name (cluster-scoped objects). Default `rollcall`. */
  namePrefix?: string;
  /** The namespaces the policies are enforced in. Default: those labelled `rollcall.dev/admission=enabled`. */
  namespaceSelector?: LabelSelector;
  /** The runner's ServiceAccount name, in any namespace. Default `rollcall-pod-runner`. */
  runnerAccount?: string;
  /**
   * The service accounts the runner's pods may run as: the ones its templates
   * name. Default `['default']` (a pod that names none runs as `default`).
   * Compiled into the policy, not read from a parameter object: ConfigMap
   * parameters are resolved through an informer that can answer "not found"
   * for one that exists (kubernetes#133827), refusing every pod.
   */
  serviceAccounts?: string[];
}

const spec = 'object.spec';
const flag = (field: string) => `(has(${spec}.${field}) && ${spec}.${field})`;

/**
 * The ValidatingAdmissionPolicies that confine the pod runner's account on the
 * server: it creates, changes and deletes only task pods (labelled
 * `rollcall.dev/runner`); they run only as the service accounts listed, with no privileged container, hostPath volume, or
 * host network, PID or IPC namespace; and the only ConfigMaps it writes are
 * task ledgers (`pod-runner-<name>-ledger`) and task records (labelled
 * `rollcall.dev/task-record`, before and after the write), where its Role
 * allows any.
 */
export function podRunnerAdmissionPolicies(options: PodRunnerAdmissionOptions = {}): Record<string, unknown>[] {
  const prefix = options.namePrefix ?? 'rollcall';
  const selector = options.namespaceSelector ?? { matchLabels: { 'rollcall.dev/admission': 'enabled' } };
  const account = options.runnerAccount ?? 'rollcall-pod-runner';
  const serviceAccounts = options.serviceAccounts ?? ['default'];
  const matchConditions = [{ name: 'rollcall-pod-runner', expression: serviceAccountCondition([account]) }];
  const pods = `${prefix}-pod-runner-pods`;
  const configMaps = `${prefix}-pod-runner-configmaps`;
  const [ledgerStart, ledgerEnd] = ledgerName('\u0000').split('\u0000');
  return [
    validatingAdmissionPolicy({
      name: pods,
      resources: [{ apiGroups: [''], resources: ['pods'], operations: ['CREATE', 'UPDATE', 'DELETE'] }],
      matchConditions,
      variables: [
        // The ServiceAccount admission plugin has already put `default` in when the pod named none.
        { name: 'serviceAccount', expression: `has(${spec}.serviceAccountName) ? ${spec}.serviceAccountName : 'default'` },
        {
          name: 'containers',
          // Ephemeral containers come later, through a subresource the runner's Role lacks.
          expression: `${spec}.containers + (has(${spec}.initContainers) ? ${spec}.initContainers : [])`,
        },
      ],
      rules: [
        // Its own pods only: the Role's patch and delete reach every pod of the namespace.
        { expression: `request.operation == 'CREATE' || (has(oldObject.metadata.labels) && ${celString(RUNNER_LABEL)} in oldObject.metadata.labels)`, message: `${account} may change or delete only task pods, labelled ${RUNNER_LABEL}` },
        { expression: `request.operation == 'DELETE' || (has(object.metadata.labels) && ${celString(RUNNER_LABEL)} in object.metadata.labels)`, message: `${account} may create only task pods, labelled ${RUNNER_LABEL}, and keeps the label` },
        // A pod's service account, containers, volumes and host namespaces are fixed at create.
        { expression: `request.operation != 'CREATE' || variables.serviceAccount in [${serviceAccounts.map(celString).join(', ')}]`, message: `${account} may create pods only as one of the service accounts ${serviceAccounts.join(', ')}` },
        { expression: `request.operation != 'CREATE' || !variables.containers.exists(c, has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged)`, message: `${account} may not create privileged containers` },
        { expression: `request.operation != 'CREATE' || !has(${spec}.volumes) || !${spec}.volumes.exists(v, has(v.hostPath))`, message: `${account} may not create pods with hostPath volumes` },
        { expression: `request.operation != 'CREATE' || (!${flag('hostNetwork')} && !${flag('hostPID')} && !${flag('hostIPC')})`, message: `${account} may not create pods in the host's network, PID or IPC namespace` },
      ],
    }),
    admissionPolicyBinding(pods, selector),
    validatingAdmissionPolicy({
      name: configMaps,
      resources: [{ apiGroups: [''], resources: ['configmaps'], operations: ['CREATE', 'UPDATE', 'DELETE'] }],
      matchConditions,
      variables: [
        { name: 'ledger', expression: `request.name.startsWith(${celString(ledgerStart!)}) && request.name.endsWith(${celString(ledgerEnd!)})` },
        // a record keeps its label: none is made out of another ConfigMap, none stops being one
        {
          name: 'record',
          expression: `(request.operation == 'CREATE' || (has(oldObject.metadata.labels) && ${celString(TASK_RECORD_LABEL)} in oldObject.metadata.labels)) && (request.operation == 'DELETE' || (has(object.metadata.labels) && ${celString(TASK_RECORD_LABEL)} in object.metadata.labels))`,
        },
      ],
      rules: [
        {
          expression: 'variables.ledger || variables.record',
          message: `${account} may write only task ledgers, ConfigMaps named ${ledgerName('<runner>')}, and task records, labelled ${TASK_RECORD_LABEL} before and after the write`,
        },
      ],
    }),
    admissionPolicyBinding(configMaps, selector),
  ];
}

const HEADER = `# Generated by podRunnerAdmissionPolicies() in packages/pod-runner/src/admission-policy.ts: do not edit;
# regenerate with \`npx nx run @rollcall/pod-runner:admission-manifest\` (a test checks this file against it).
# Needs Kubernetes >= 1.30 and a cluster admin (policies and bindings are cluster-scoped).
# Enforced in the namespaces labelled rollcall.dev/admission=enabled (see README.md). The runner's pods
# may run only as the service account \`default\`: when its templates name others, generate the file
# with podRunnerAdmissionPolicies({ serviceAccounts: [...] }) or edit your copy's list in the first validation.
`;

/** The shipped deploy/kubernetes/rollcall-pod-runner-admission.yaml: {@link podRunnerAdmissionPolicies} with its defaults, as YAML. */
export function podRunnerAdmissionManifest(options: PodRunnerAdmissionOptions = {}): string {
  return HEADER + manifestYaml(podRunnerAdmissionPolicies(options));
}
