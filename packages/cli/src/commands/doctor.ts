import { performance } from 'node:perf_hooks';
import { hasCode, silentLogger, systemClock } from '@rollcall/core';
import { accessReviewOf } from '@rollcall/core/admin';
import type { AccessPermission, AccessReview, RecordStore } from '@rollcall/core/spi';
import { describeKeys, resolveCliConfig, type CliConfig, type ConfigFlags } from '../config.js';
import { CliError, ExitCode, toCliError, usageError } from '../errors.js';
import { outputFormat, printJson } from '../output.js';
import { applyCommand, manifestFile } from './manifests.js';
import { printable } from '../terminal.js';

export interface DoctorFlags extends ConfigFlags {
  role?: string;
  output?: string;
  json?: boolean;
}

type Status = 'ok' | 'warn' | 'fail' | 'skip';

interface Check {
  name: string;
  status: Status;
  detail: string;
  /** What is missing, e.g. `update leases.coordination.k8s.io`. */
  missing?: string[];
  /** The command that grants it: `rollcall manifests … | kubectl apply -f -`. */
  fix?: string;
  code?: string;
}

/** A permission a Rollcall component needs on Kubernetes. */
type Permission = AccessPermission;

export type DoctorRole = 'coordinator' | 'member' | 'pod-runner' | 'viewer';
const ROLES: readonly DoctorRole[] = ['coordinator', 'member', 'pod-runner', 'viewer'];

/** What @rollcall/pod-runner needs, as `rollcall manifests --role pod-runner` grants it: no exec, no wildcard. */
const POD_RUNNER_PERMISSIONS: readonly Permission[] = [
  ...['create', 'get', 'list', 'watch', 'patch', 'delete'].map((verb) => ({ verb, group: '', resource: 'pods' })),
  { verb: 'get', group: '', resource: 'pods', subresource: 'log' },
  { verb: 'list', group: '', resource: 'events' },
  { verb: 'watch', group: '', resource: 'events' },
  // the task records (one ConfigMap per task): the informer, conditional writes, the request patches, retention
  ...['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'].map((verb) => ({ verb, group: '', resource: 'configmaps' })),
  { verb: 'get', group: '', resource: 'podtemplates' },
  // the term Lease, pod-runner-<name>-term: read, made at term 0, raised
  ...['get', 'create', 'update'].map((verb) => ({ verb, group: 'coordination.k8s.io', resource: 'leases' })),
];

const LEASE_VERBS = { coordinator: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'], member: ['get', 'list', 'watch', 'create', 'patch', 'delete'], viewer: ['get', 'list', 'watch'] };
const CONFIGMAP_VERBS = { coordinator: ['get', 'list', 'watch', 'create', 'update', 'delete'], member: ['get', 'list', 'watch'], viewer: ['get', 'list', 'watch'] };

/** `registry.member.liveness=pod`: readers follow the role Services' EndpointSlices (never pods). */
const POD_LIVENESS_PERMISSIONS: readonly Permission[] = ['get', 'list', 'watch'].map((verb) => ({ verb, group: 'discovery.k8s.io', resource: 'endpointslices' }));

/** What the shipped manifests (`rollcall manifests`) grant each role: the least privilege Rollcall needs. */
export function requiredPermissions(role: DoctorRole, lock: string, liveness = 'heartbeat'): Permission[] {
  if (role === 'pod-runner') return [...POD_RUNNER_PERMISSIONS];
  const leases = LEASE_VERBS[role].map((verb) => ({ verb, group: 'coordination.k8s.io', resource: 'leases' }));
  const configMaps = lock === 'configmap' ? CONFIGMAP_VERBS[role].map((verb) => ({ verb, group: '', resource: 'configmaps' })) : [];
  return [...leases, ...configMaps, ...(liveness === 'pod' ? POD_LIVENESS_PERMISSIONS : [])];
}

/** Asks the API server, one SelfSubjectAccessReview per permission, which of them this identity lacks. */
async function missingKubernetesPermissions(access: AccessReview, permissions: Permission[]): Promise<Permission[]> {
  const answers = await Promise.all(
    permissions.map(async (p) => {
      try {
        return await access.isAllowed(p);
      } catch (err) {
        const code = (err as { code?: string }).code;
        throw new CliError('UNAVAILABLE', `SelfSubjectAccessReview for ${p.verb} ${p.resource} failed${code ? ` (${code})` : ''}`, ExitCode.UNAVAILABLE, 'every authenticated identity may create SelfSubjectAccessReviews; is the API server reachable?', 'kubernetes');
      }
    }),
  );
  return permissions.filter((_, i) => !answers[i]);
}

const resourceName = (p: Permission) => `${p.group ? `${p.resource}.${p.group}` : p.resource}${p.subresource ? `/${p.subresource}` : ''}`;

/** The shipped ValidatingAdmissionPolicies that judge a role's writes, each with its binding (`rollcall manifests --admission`). */
export function shippedAdmission(role: DoctorRole): { policy: string; binding: string }[] {
  return shippedPolicies(role === 'pod-runner' ? 'pod-runner-admission' : 'admission');
}

/** The policies of a shipped policy file, each with its binding. */
function shippedPolicies(file: string): { policy: string; binding: string }[] {
  return manifestFile(file)
    .split(/^---\s*$/m)
    .flatMap((doc) => {
      if (!/^kind: ValidatingAdmissionPolicyBinding\s*$/m.test(doc)) return [];
      const binding = /^ {2}name: (\S+)/m.exec(doc)?.[1];
      const policy = /^ {2}policyName: (\S+)/m.exec(doc)?.[1];
      return binding && policy ? [{ policy, binding }] : [];
    });
}

interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** Whether `selector` selects an object with `labels`, as the API server decides it (an empty selector selects everything). */
export function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector?.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, key);
    if (operator === 'In' && !(has && values.includes(labels[key]!))) return false;
    if (operator === 'NotIn' && has && values.includes(labels[key]!)) return false;
    if (operator === 'Exists' && !has) return false;
    if (operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

const describeSelector = (s: LabelSelector | undefined) =>
  [...Object.entries(s?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`), ...(s?.matchExpressions ?? []).map((e) => `${e.key} ${e.operator}${e.values ? ` (${e.values.join(', ')})` : ''}`)].join(', ') || 'every namespace';

const ADMISSION_API = '/apis/admissionregistration.k8s.io/v1';

interface Binding {
  spec?: { policyName?: string; validationActions?: string[]; matchResources?: { namespaceSelector?: LabelSelector } };
}

/** A set of shipped cluster-scoped policies {@link policyCheck} looks for, and what it says of them. */
interface PolicySet {
  /** The check's name in the report. */
  name: string;
  expected: { policy: string; binding: string }[];
  /** The namespace label that opts in, for the hint. */
  label: string;
  /** The command that installs them. */
  fix: string;
  /** What it means that they do not judge the namespace: the start of the warning. */
  without: string;
  /** What it means that they do. */
  with: string;
  /** Where else to tell, for an identity that may not read them. */
  elsewhere?: string;
}

/** The shipped admission policies of `role`: each account confined to its own Leases (and the runner to its pods and records). */
function admissionSet(role: DoctorRole, namespace: string): PolicySet {
  return {
    name: 'admission',
    expected: shippedAdmission(role),
    label: 'rollcall.dev/admission=enabled',
    fix: `rollcall manifests --admission --namespace ${namespace} | kubectl apply -f - (as a cluster admin)`,
    without: `the admission policies do not confine the accounts in namespace ${namespace} (only the Roles do)`,
    with: 'their bindings deny',
  };
}

/**
 * The pod runner's fencing policy (`rollcall manifests --role pod-runner
 * --fencing`): without it in the namespace, fencing is client-only — a
 * deposed runner term's late write is stopped only by its own gate and the
 * preconditions (see the pod runner's README, "Fencing").
 */
function fencingSet(namespace: string): PolicySet {
  return {
    name: 'fencing',
    expected: shippedPolicies('pod-runner-fencing'),
    label: 'rollcall.dev/pod-runner-fencing=enabled',
    fix: `rollcall manifests --role pod-runner --fencing --namespace ${namespace} | kubectl apply -f - (as a cluster admin: the policies, and the namespace's label rollcall.dev/pod-runner-fencing=enabled)`,
    without: `fencing is client-only in namespace ${namespace}: the server does not refuse a deposed runner term's writes`,
    with: "their bindings deny a deposed runner term's writes",
    elsewhere: "; a runner they do not judge logs \"fencing not enforced by the server\" when it takes a term",
  };
}

/**
 * Whether a set of shipped policies and their bindings exist and bind
 * `namespace` with Deny (read-only: GETs of the cluster-scoped objects and of
 * the namespace). Missing or not binding is a warning, as the policies are a
 * second layer an administrator opts into; an identity that may not read them
 * (every Rollcall account: their Roles are namespaced) gets a skip saying so.
 */
async function policyCheck(set: PolicySet, options: Record<string, unknown>, namespace: string, requestTimeoutMs: number): Promise<Check> {
  const { name, fix } = set;
  let kube: typeof import('@rollcall/kube-client');
  try {
    // a dependency of @rollcall/kubernetes, present wherever registry.type=kubernetes works
    kube = await import('@rollcall/kube-client');
  } catch {
    return { name, status: 'skip', detail: '@rollcall/kube-client (installed with @rollcall/kubernetes) could not be loaded' };
  }
  const source: { kubeconfig?: string; context?: string } = {};
  if (typeof options.kubeconfig === 'string') source.kubeconfig = options.kubeconfig;
  if (typeof options.context === 'string') source.context = options.context;
  const client = new kube.ApiClient(kube.loadKubeConfig(source), requestTimeoutMs, kube.userAgent(undefined));
  const get = async <T>(path: string, resource: string, objectName?: string, inNamespace = '(cluster-scoped)'): Promise<T | undefined> => {
    try {
      return await client.request<T>({ method: 'GET', path, context: { verb: 'get', resource, namespace: inNamespace, ...(objectName ? { name: objectName } : {}) } });
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) return undefined;
      throw err;
    }
  };
  const { expected } = set;
  const what = [...new Set(expected.map((e) => e.policy))].join(', ');
  try {
    const group = await get<{ resources?: { name?: string }[] }>(ADMISSION_API, 'admissionregistration.k8s.io/v1');
    if (!group?.resources?.some((r) => r.name === 'validatingadmissionpolicies')) {
      return { name, status: 'warn', detail: `${set.without}: the API server does not serve ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, Kubernetes >= 1.30)` };
    }
    const problems: string[] = [];
    let labels: Record<string, string> | undefined;
    let labelsUnreadable = false;
    for (const { policy, binding } of expected) {
      if (!(await get(`${ADMISSION_API}/validatingadmissionpolicies/${policy}`, 'validatingadmissionpolicies.admissionregistration.k8s.io', policy))) {
        problems.push(`policy ${policy} does not exist`);
        continue;
      }
      const bound = await get<Binding>(`${ADMISSION_API}/validatingadmissionpolicybindings/${binding}`, 'validatingadmissionpolicybindings.admissionregistration.k8s.io', binding);
      if (!bound) {
        problems.push(`binding ${binding} does not exist`);
        continue;
      }
      const spec = bound.spec ?? {};
      if (spec.policyName !== policy) problems.push(`binding ${binding} binds ${spec.policyName ?? 'no policy'}, not ${policy}`);
      if (!spec.validationActions?.includes('Deny')) problems.push(`binding ${binding} does not deny (validationActions: ${spec.validationActions?.join(', ') || 'none'})`);
      const selector = spec.matchResources?.namespaceSelector;
      if (selector && (Object.keys(selector.matchLabels ?? {}).length || selector.matchExpressions?.length)) {
        if (labels === undefined && !labelsUnreadable) {
          try {
            labels = (await get<{ metadata?: { labels?: Record<string, string> } }>(`/api/v1/namespaces/${namespace}`, 'namespaces', namespace, namespace))?.metadata?.labels ?? {};
          } catch (err) {
            if (!hasCode(err, 'PERMISSION_DENIED')) throw err;
            labelsUnreadable = true;
          }
        }
        if (labelsUnreadable) problems.push(`binding ${binding} selects namespaces by label (${describeSelector(selector)}), and this identity may not read namespace ${namespace}'s labels to tell`);
        else if (!selects(selector, labels!)) problems.push(`binding ${binding} does not select namespace ${namespace} (it selects ${describeSelector(selector)}; label the namespace, e.g. kubectl label namespace ${namespace} ${set.label})`);
      }
    }
    if (problems.length === 0) return { name, status: 'ok', detail: `policies ${what} exist and ${set.with} in namespace ${namespace}` };
    return { name, status: 'warn', detail: `${set.without}: ${[...new Set(problems)].join('; ')}; installed by: ${fix}`, fix };
  } catch (err) {
    if (hasCode(err, 'PERMISSION_DENIED')) {
      return { name, status: 'skip', detail: `this identity may not read validatingadmissionpolicies (cluster-scoped; the Rollcall Roles grant none), so whether ${what} bind namespace ${namespace} is unknown: a cluster admin can run rollcall doctor, or kubectl get validatingadmissionpolicybindings${set.elsewhere ?? ''}` };
    }
    const e = toCliError(err, 'doctor');
    return { name, status: 'fail', detail: `${e.code}: ${e.message}`, code: e.code };
  } finally {
    client.close();
  }
}

/**
 * `rollcall doctor`: checks the configuration, the connection (a list of the
 * cluster's records) and, on Kubernetes, every permission the chosen role
 * needs, printing what is missing and the manifest that grants it, and
 * whether the shipped admission policies bind the namespace.
 */
export async function doctorCommand(flags: DoctorFlags): Promise<number> {
  const format = outputFormat(flags);
  const role = (flags.role ?? 'coordinator') as DoctorRole;
  if (!ROLES.includes(role)) throw usageError(`--role ${JSON.stringify(role)}: expected coordinator (campaigns and locks), member (announces and discovers), pod-runner (runs tasks as pods) or viewer (read commands, dashboards)`);
  const checks: Check[] = [];
  const fail = (name: string, err: unknown) => {
    const e = toCliError(err, 'doctor');
    checks.push({ name, status: 'fail', detail: `${e.code}: ${e.message}${e.hint ? ` (hint: ${e.hint})` : ''}`, code: e.code });
  };

  let config: CliConfig | undefined;
  try {
    config = await resolveCliConfig(flags, process.env, {}, 'read');
    const keys = describeKeys(config);
    checks.push({ name: 'configuration', status: 'ok', detail: `registry.type=${config.resolved.type}, cluster ${config.resolved.cluster}, identity ${config.resolved.identity}; ${keys.map((k) => `${k.key}=${k.value} (${k.source})`).join(', ')}` });
    if (config.resolved.type === 'memory') checks.push({ name: 'configuration', status: 'warn', detail: 'the memory store lives inside one process: this command sees only its own, empty registry; use sqlite or a server backend to share one' });
  } catch (err) {
    fail('configuration', err);
  }

  let store: RecordStore | undefined;
  if (config) {
    const started = performance.now();
    try {
      store = await config.plugin.connect({ cluster: config.resolved.cluster, options: config.resolved.options, logger: silentLogger, clock: systemClock, requestTimeoutMs: config.resolved.requestTimeoutMs, readOnly: config.resolved.readOnly });
      const connectedMs = performance.now() - started;
      const listStarted = performance.now();
      const list = await store.list('');
      const kinds = { member: 0, election: 0, lock: 0 };
      for (const r of list.records) {
        const kind = r.key.slice(0, r.key.indexOf('/')) as keyof typeof kinds;
        if (kind in kinds) kinds[kind]++;
      }
      checks.push({
        name: 'connection',
        status: list.corrupt.length ? 'warn' : 'ok',
        detail: `connected to ${store.backend} in ${connectedMs.toFixed(0)} ms; listed ${list.records.length} records (${kinds.member} members, ${kinds.election} elections, ${kinds.lock} locks) in ${(performance.now() - listStarted).toFixed(0)} ms${list.corrupt.length ? `; ${list.corrupt.length} corrupt: ${list.corrupt.map((c) => c.key).join(', ')}` : ''}`,
      });
    } catch (err) {
      // the pod runner's Role grants pods, not Leases: reaching the API server is what counts
      if (role === 'pod-runner' && store && (err as { code?: string }).code === 'PERMISSION_DENIED') checks.push({ name: 'connection', status: 'ok', detail: `connected to ${store.backend}; no access to the registry's records, which a pod runner without a registry does not need` });
      else fail('connection', err);
    }
  } else {
    checks.push({ name: 'connection', status: 'skip', detail: 'the configuration is invalid' });
  }

  // Asked of a store that declares an access review (Kubernetes: SelfSubjectAccessReviews); the skip names the API server it could not reach.
  const access = store && accessReviewOf(store);
  if (config?.resolved.type === 'kubernetes' && !store) {
    checks.push({ name: 'permissions', status: 'skip', detail: 'could not connect to the API server' });
  } else if (config && access) {
    const namespace = access.namespace;
    const options = config.resolved.options as Record<string, unknown>;
    // the ConfigMap lock is the registry's; a pod runner's manifest has no part of it
    const lock = role === 'pod-runner' ? 'lease' : String(options.lock ?? 'lease');
    // member liveness is the registry's too: pod mode reads EndpointSlices
    const liveness = role === 'pod-runner' ? 'heartbeat' : config.resolved.member.liveness;
    const needed = requiredPermissions(role, lock, liveness);
    try {
      const missing = await missingKubernetesPermissions(access, needed);
      if (missing.length === 0) {
        checks.push({ name: 'permissions', status: 'ok', detail: `role ${role}: all ${needed.length} permissions granted in namespace ${namespace} (${[...new Set(needed.map(resourceName))].join(', ')})` });
      } else {
        const fix = applyCommand(role, namespace, lock, liveness);
        checks.push({
          name: 'permissions',
          status: 'fail',
          code: 'PERMISSION_DENIED',
          detail: `role ${role}: missing in namespace ${namespace}: ${missing.map((p) => `${p.verb} ${resourceName(p)}`).join(', ')}; granted by the ${role} manifest: ${fix} (its RoleBinding binds the ServiceAccount rollcall-${role}; run this identity as it, or bind its own)`,
          missing: missing.map((p) => `${p.verb} ${resourceName(p)}`),
          fix,
        });
      }
    } catch (err) {
      fail('permissions', err);
    }
    checks.push(await policyCheck(admissionSet(role, namespace), options, namespace, config.resolved.requestTimeoutMs));
    if (role === 'pod-runner') checks.push(await policyCheck(fencingSet(namespace), options, namespace, config.resolved.requestTimeoutMs));
  }
  await store?.close().catch(() => {});

  const ok = checks.every((c) => c.status !== 'fail');
  if (format === 'json') printJson({ ok, checks });
  else {
    for (const c of checks) process.stdout.write(`${c.status.toUpperCase().padEnd(5)} ${c.name.padEnd(14)} ${printable(c.detail)}\n`);
    process.stdout.write(ok ? 'doctor: no problem found\n' : `doctor: ${checks.filter((c) => c.status === 'fail').length} problem(s) found\n`);
  }
  return ok ? ExitCode.OK : ExitCode.CHECK_FAILED;
}
