import { readdirSync, readFileSync } from 'node:fs';
import { usageError } from '../errors.js';

/**
 * Where the build copies deploy/kubernetes/rollcall-*.yaml, byte for byte: a
 * user with only the package gets the same files as the repository's.
 */
const MANIFEST_DIR = new URL('../manifests/', import.meta.url);

/** Not a role: what `--lock configmap` adds to a role's manifest. */
const CONFIGMAP_LOCK = 'configmap-lock';
/** Not a role: what `--liveness pod` adds to a role's manifest. */
const POD_LIVENESS = 'pod-liveness';
/**
 * Not roles: the cluster-scoped admission policies `--admission` prints, the
 * Leases' (leaseAdmissionManifest of @rollcall/kubernetes) and the pod
 * runner's (podRunnerAdmissionManifest of @rollcall/pod-runner).
 */
const ADMISSION = ['admission', 'pod-runner-admission'];
/** The namespace label that opts a namespace into the admission policies (ADMISSION_LABEL of @rollcall/kubernetes). */
const ADMISSION_LABEL = 'rollcall.dev/admission';
/** Not a role: the pod runner's cluster-scoped fencing policy that `--role pod-runner --fencing` prints (fencingManifest of @rollcall/pod-runner). */
const FENCING = 'pod-runner-fencing';
/** The namespace label that opts a namespace into the fencing policy (FENCING_NAMESPACE_LABEL of @rollcall/pod-runner). */
const FENCING_LABEL = 'rollcall.dev/pod-runner-fencing';

/** The namespace the shipped files bind their subjects in; replaced by `--namespace`. */
const SHIPPED_NAMESPACE = 'rollcall';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A pod runner's name (its `name` option): a DNS label of at most 30 characters. */
const RUNNER_NAME = /^[a-z0-9]([-a-z0-9]{0,28}[a-z0-9])?$/;

/** The pod runner Role's term Lease rule as shipped: any Lease, get create update. */
const TERM_LEASE_RULE = /^( {2}- apiGroups: \["coordination\.k8s\.io"\]\n {4}resources: \["leases"\]\n(?: {4}#.*\n)*) {4}verbs: \["get", "create", "update"\]$/m;

/**
 * The pod runner's manifest with its term Lease rule limited to one runner's
 * Lease, `pod-runner-<runner>-term`, on get and update; create stays on any
 * name, as RBAC cannot limit a create by name (the fencing policy names it).
 */
export function withTermLease(text: string, runner: string): string {
  if (!TERM_LEASE_RULE.test(text)) throw new Error('rollcall-pod-runner.yaml has no term Lease rule (get, create, update on leases) to name');
  return text.replace(
    TERM_LEASE_RULE,
    (_, head: string) => `${head}    verbs: ["create"]\n  - apiGroups: ["coordination.k8s.io"]\n    resources: ["leases"]\n    # --runner ${runner}: get and update only its term Lease\n    resourceNames: ["pod-runner-${runner}-term"]\n    verbs: ["get", "update"]`,
  );
}

/** Every role a manifest ships for, from the file names (`rollcall-<role>.yaml`). */
export function manifestRoles(): string[] {
  return readdirSync(MANIFEST_DIR)
    .map((f) => /^rollcall-(.+)\.yaml$/.exec(f)?.[1])
    .filter((r): r is string => r !== undefined && r !== CONFIGMAP_LOCK && r !== POD_LIVENESS && r !== FENCING && !ADMISSION.includes(r))
    .sort();
}

/** The shipped file for a role (or the ConfigMap lock's), as it is in deploy/kubernetes. */
export function manifestFile(name: string): string {
  return readFileSync(new URL(`rollcall-${name}.yaml`, MANIFEST_DIR), 'utf8');
}

/**
 * Puts every object of a multi-document manifest in `namespace`: a
 * `namespace:` under each top-level `metadata:`, and the RoleBinding subjects
 * moved from the shipped namespace to it. Text in, text out, comments kept.
 */
export function inNamespace(text: string, namespace: string): string {
  return text
    .split('\n')
    .flatMap((line) => {
      if (line === 'metadata:') return [line, `  namespace: ${namespace}`];
      const subject = /^(\s+)namespace: (\S+)$/.exec(line);
      if (subject && subject[2] === SHIPPED_NAMESPACE) return [`${subject[1]}namespace: ${namespace}`];
      return [line];
    })
    .join('\n');
}

export interface ManifestsFlags {
  role?: string;
  namespace?: string;
  lock?: string;
  liveness?: string;
  admission?: boolean;
  fencing?: boolean;
  /** With `--role pod-runner`: the runner's name, to limit its term Lease rule to `pod-runner-<runner>-term`. */
  runner?: string;
}

/**
 * `rollcall manifests --admission [--namespace <ns>]`: the ValidatingAdmissionPolicies
 * and bindings that confine Rollcall's accounts to their own Leases, for a
 * cluster admin (cluster-scoped, Kubernetes >= 1.30); with a namespace, also
 * that namespace labelled to opt in (created when it does not exist: a
 * dedicated namespace is the recommended place for Rollcall's records).
 */
function admissionManifest(flags: ManifestsFlags): string {
  if (flags.fencing) throw usageError('--fencing is the pod runner\'s fencing policy: print it with --role pod-runner --fencing, apart from --admission');
  if (flags.role !== undefined) throw usageError('--admission prints the cluster-scoped policies, for a cluster admin; print a role\'s manifest with a separate --role command');
  if (flags.lock !== undefined && flags.lock !== 'lease') throw usageError('--lock configmap: the admission policies judge Leases only; they do not cover ConfigMap locks');
  const policies = ADMISSION.map((f) => manifestFile(f).trimEnd()).join('\n---\n');
  if (flags.namespace === undefined) return policies + '\n';
  if (!DNS_LABEL.test(flags.namespace)) throw usageError(`--namespace ${JSON.stringify(flags.namespace)}: expected a namespace name (a DNS-1123 label), the one registry.kubernetes.namespace names`);
  return `${policies}\n---\n${optIn(flags.namespace, ADMISSION_LABEL)}`;
}

/** A Namespace labelled to opt in to a cluster-scoped policy, as YAML. */
function optIn(name: string, label: string): string {
  const namespace = ['apiVersion: v1', 'kind: Namespace', 'metadata:', `  name: ${name}`, '  labels:', `    ${label}: enabled`].join('\n');
  return `# Opts the namespace in (kubectl apply adds the label to an existing namespace).\n${namespace}\n`;
}

/**
 * `rollcall manifests --role pod-runner --fencing [--namespace <ns>]`: the
 * ValidatingAdmissionPolicies that refuse a deposed runner term's pod and
 * record writes on the server, for a cluster admin (cluster-scoped,
 * Kubernetes >= 1.30); with a namespace, also that namespace labelled to opt
 * in. Only for the second-generation runner, which stamps its writes.
 */
function fencingManifest(flags: ManifestsFlags): string {
  if (flags.role !== 'pod-runner') throw usageError(`--fencing fences the pod runner's writes: use --role pod-runner --fencing, not --role ${JSON.stringify(flags.role ?? '')}`);
  if (flags.lock !== undefined || (flags.liveness !== undefined && flags.liveness !== 'heartbeat')) throw usageError('--fencing prints the cluster-scoped fencing policy alone; print the runner\'s Role with a separate --role pod-runner command');
  const policy = manifestFile(FENCING).trimEnd();
  if (flags.namespace === undefined) return policy + '\n';
  if (!DNS_LABEL.test(flags.namespace)) throw usageError(`--namespace ${JSON.stringify(flags.namespace)}: expected a namespace name (a DNS-1123 label), the one the pod runner runs in`);
  return `${policy}\n---\n${optIn(flags.namespace, FENCING_LABEL)}`;
}

/**
 * `rollcall manifests --role <role> --namespace <ns>`: the ServiceAccount, Role
 * and RoleBinding a component needs, for `| kubectl apply -f -`.
 */
export function manifestsCommand(flags: ManifestsFlags): void {
  if (flags.runner !== undefined && (flags.admission || flags.fencing)) throw usageError('--runner limits the pod runner\'s Role: print the cluster-scoped policies without it');
  if (flags.admission) {
    process.stdout.write(admissionManifest(flags));
    return;
  }
  if (flags.fencing) {
    process.stdout.write(fencingManifest(flags));
    return;
  }
  const roles = manifestRoles();
  if (!flags.role || !roles.includes(flags.role)) throw usageError(`--role ${JSON.stringify(flags.role ?? '')}: expected one of ${roles.join(', ')}`);
  const namespace = flags.namespace ?? '';
  if (!DNS_LABEL.test(namespace)) throw usageError(`--namespace ${JSON.stringify(namespace)}: expected a namespace name (a DNS-1123 label), the one registry.kubernetes.namespace names`);
  const lock = flags.lock ?? 'lease';
  if (lock !== 'lease' && lock !== 'configmap') throw usageError(`--lock ${JSON.stringify(lock)}: expected lease or configmap, as registry.kubernetes.lock`);
  if (lock === 'configmap' && flags.role === 'pod-runner') throw usageError('--lock configmap: the ConfigMap lock is the registry\'s; a pod runner with a registry applies it with --role coordinator');
  const liveness = flags.liveness ?? 'heartbeat';
  if (!['heartbeat', 'reaper', 'pod'].includes(liveness)) throw usageError(`--liveness ${JSON.stringify(liveness)}: expected heartbeat, reaper or pod, as registry.member.liveness`);
  if (liveness === 'pod' && flags.role === 'pod-runner') throw usageError('--liveness pod: member liveness is the registry\'s; a pod runner with a registry applies it with --role coordinator');
  if (flags.runner !== undefined && flags.role !== 'pod-runner') throw usageError(`--runner names a pod runner's term Lease: use it with --role pod-runner, not --role ${JSON.stringify(flags.role)}`);
  if (flags.runner !== undefined && !RUNNER_NAME.test(flags.runner)) throw usageError(`--runner ${JSON.stringify(flags.runner)}: expected the runner's name (its name option), a DNS label of at most 30 characters`);
  const account = `rollcall-${flags.role}`;
  const own = flags.runner === undefined ? manifestFile(flags.role) : withTermLease(manifestFile(flags.role), flags.runner);
  const files = [own, ...(lock === 'configmap' ? [boundTo(manifestFile(CONFIGMAP_LOCK), account)] : []), ...(liveness === 'pod' ? [boundTo(manifestFile(POD_LIVENESS), account)] : [])];
  process.stdout.write(files.map((f) => inNamespace(f.trimEnd(), namespace)).join('\n---\n') + '\n');
}

/**
 * The documents of a multi-document manifest that concern `account`: the
 * RoleBindings whose subject it is, and the Roles they bind. The ConfigMap
 * lock's file has a Role for each account; `--role member` must not print the
 * coordinator's binding. Comments before a kept document stay with it.
 */
export function boundTo(text: string, account: string): string {
  const docs = text.split(/^---\n/m);
  const field = (doc: string, re: RegExp) => re.exec(doc)?.[1];
  const bindings = docs.filter((d) => field(d, /^kind: (\S+)$/m) === 'RoleBinding' && new RegExp(`^\\s+name: ${account}$`, 'm').test(d.slice(d.indexOf('subjects:'))));
  const roles = new Set(bindings.map((d) => field(d.slice(d.indexOf('roleRef:')), /^\s+name: (\S+)$/m)));
  const kept = docs.filter((d) => bindings.includes(d) || (field(d, /^kind: (\S+)$/m) === 'Role' && roles.has(field(d.slice(d.indexOf('metadata:')), /^\s+name: (\S+)$/m))));
  return kept.map((d) => d.trimEnd()).join('\n---\n');
}

/** The command line that prints and applies a role's manifest: what `doctor` tells a user to run. */
export function applyCommand(role: string, namespace: string, lock: string, liveness = 'heartbeat'): string {
  return `rollcall manifests --role ${role} --namespace ${namespace}${lock === 'configmap' ? ' --lock configmap' : ''}${liveness === 'pod' ? ' --liveness pod' : ''} | kubectl apply -f -`;
}
