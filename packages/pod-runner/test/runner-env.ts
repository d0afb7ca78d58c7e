import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@rollcall/conformance';
import { KubeAdmin, KWOK_POD_ANNOTATIONS, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { AuthorizationV1Api, PatchStrategy, setHeaderOptions, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { createPodRunner, FENCING_NAMESPACE_LABEL, type PodRunner, type PodRunnerOptions, type PodTemplateSpec, RUNNER_LABEL, type Task } from '../src/index.js';
import type { TaskRecordBody } from '../src/task-record.js';

export const admin = new KubeAdmin();

/** A fresh namespace with the shipped rollcall-pod-runner Role bound to its service account, and a kubeconfig with that account's token. */
export async function runnerNamespace(prefix: string): Promise<{ namespace: string; kubeconfig: string }> {
  const namespace = await admin.namespace(prefix, { forPods: true });
  await admin.applyManifest('rollcall-pod-runner.yaml', namespace);
  await untilAuthorized(namespace, 'rollcall-pod-runner');
  return { namespace, kubeconfig: await serviceAccountKubeconfig(namespace, 'rollcall-pod-runner') };
}

/**
 * Resolves once the API server's authorizer grants `serviceAccount` both Roles of
 * the shipped manifest (its pods Role and its election Role): the RBAC authorizer
 * reads Roles and RoleBindings from its own cache, which a loaded server fills
 * after the create has answered, so a runner started at once could be refused.
 */
export async function untilAuthorized(namespace: string, serviceAccount: string): Promise<void> {
  const authz = admin.kc.makeApiClient(AuthorizationV1Api);
  const allowed = async (verb: string, resource: string, group = '') =>
    (
      await authz.createSubjectAccessReview({
        body: { spec: { user: `system:serviceaccount:${namespace}:${serviceAccount}`, groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'], resourceAttributes: { namespace, verb, resource, group } } },
      })
    ).status?.allowed === true;
  await waitFor(async () => (await allowed('create', 'pods')) && (await allowed('patch', 'configmaps')) && (await allowed('update', 'leases', 'coordination.k8s.io')), 30_000, `the authorizer to grant ${serviceAccount} its Roles in ${namespace}`);
}

/**
 * Makes a ResourceQuota of `pods` pods in `namespace` and resolves once the API
 * server enforces it. The quota admission plugin reads quotas from its own cache,
 * which sees the controller's status after a GET does: a pod created at once could
 * be admitted past the quota. The quota also allows no Service, which the runner
 * never makes, so a dry-run Service refused shows the plugin enforcing it.
 */
export async function enforcedPodQuota(namespace: string, name: string, pods: number): Promise<void> {
  await admin.core.createNamespacedResourceQuota({ namespace, body: { metadata: { name }, spec: { hard: { pods: String(pods), services: '0' } } } });
  const refused = async () => {
    try {
      await admin.core.createNamespacedService({ namespace, body: { metadata: { generateName: 'quota-probe-' }, spec: { ports: [{ port: 80 }] } }, dryRun: 'All' });
      return false;
    } catch (err) {
      if ((err as { code?: number }).code === 403) return true;
      throw err;
    }
  };
  await waitFor(refused, 30_000, `the API server to enforce quota ${name} in ${namespace}`);
}

/**
 * Installs a suite's own fencing policies (`fencingPolicy` bound by the
 * namespace label `suite`) and labels `namespace` with it. A policy an
 * earlier run left is replaced, never deleted (an API server drops a
 * paramKind's informer for good once no binding names it, kubernetes#130887),
 * and judges by its new version once the server has checked it: resolves
 * after that. The namespace cache may show the label later still: each suite
 * waits for its own sign that the policy judges the namespace.
 */
export async function installSuitePolicy(policies: readonly KubernetesObject[], namespace: string, suite: string): Promise<void> {
  for (const doc of policies) await createOrReplace(doc);
  for (const doc of policies.filter((d) => d.kind === 'ValidatingAdmissionPolicy')) {
    const name = doc.metadata!.name!;
    await waitFor(async () => {
      const stored = (await admin.objects.read(doc as KubernetesObject & { metadata: { name: string } })) as KubernetesObject & { status?: { observedGeneration?: number } };
      return stored.status?.observedGeneration === stored.metadata!.generation || undefined;
    }, 30_000, `policy ${name} checked by the API server`);
  }
  await admin.core.patchNamespace({ name: namespace, body: { metadata: { labels: { [FENCING_NAMESPACE_LABEL]: suite } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
}

async function createOrReplace(doc: KubernetesObject): Promise<void> {
  try {
    await admin.objects.create(doc);
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
    const stored = await admin.objects.read(doc as KubernetesObject & { metadata: { name: string } });
    await admin.objects.replace({ ...doc, metadata: { ...doc.metadata, resourceVersion: stored.metadata!.resourceVersion } });
  }
}

/** A template whose pods kwok runs: one container, `main`. */
export function podTemplate(extra: Partial<PodTemplateSpec['spec']> = {}, labels: Record<string, string> = {}): PodTemplateSpec {
  return { metadata: { labels }, spec: { containers: [{ name: 'main', image: 'registry.example/task:1' }], ...extra } };
}

/** Starts a runner as the namespace's rollcall-pod-runner service account. */
export function startRunner(env: { namespace: string; kubeconfig: string }, options: Partial<PodRunnerOptions> = {}): Promise<PodRunner> {
  return createPodRunner({ namespace: env.namespace, kubeconfig: env.kubeconfig, templates: [{ name: 'default', template: podTemplate() }], ...options });
}

/** Annotations that make kwok end the task's container: exit code, termination message, after `runMs` running. */
export function exits(exitCode: number, options: { message?: string; runMs?: number } = {}): Pick<Task, 'annotations'> {
  return {
    annotations: {
      [KWOK_POD_ANNOTATIONS.exitCode]: String(exitCode),
      ...(options.message !== undefined ? { [KWOK_POD_ANNOTATIONS.message]: options.message } : {}),
      ...(options.runMs !== undefined ? { [KWOK_POD_ANNOTATIONS.runFor]: `${options.runMs}ms` } : {}),
    },
  };
}

/** Annotations that keep the task's container waiting with `reason` (ImagePullBackOff, InvalidImageName, …). */
export function waits(reason: string): Pick<Task, 'annotations'> {
  return { annotations: { [KWOK_POD_ANNOTATIONS.waitingReason]: reason } };
}

let submitted = 0;
/**
 * A queued task record's body, as a runner writes it at submit, with `change`
 * over it (tests that write records with a TaskStore in place of a runner):
 * each call takes the next `seq`, and a submit time that many seconds after
 * 2026-12-07T16:00:00Z, so the records sort in the order they were made.
 */
export function queuedRecord(taskId: string, change: Partial<TaskRecordBody> = {}): TaskRecordBody {
  submitted++;
  return { v: 2, state: 'queued', task: { taskId, taskType: 'report', attempt: 1 }, template: 'default', specHash: 'h1', submittedAt: new Date(Date.UTC(2026, 11, 7, 16, 0, submitted)).toISOString(), seq: submitted, ...change };
}

/** Every pod of a runner in the namespace, as the API server has them now. */
export async function runnerPods(namespace: string, runner = 'rollcall'): Promise<V1Pod[]> {
  return (await admin.core.listNamespacedPod({ namespace, labelSelector: `${RUNNER_LABEL}=${runner}` })).items;
}

/** A node process running `test/fixtures/<fixture>` with `arg` as its one argument (JSON): each stdout line to `onLine`, stderr kept, its exit. */
export function fixtureChild(fixture: string, arg: unknown, onLine: (line: string) => void) {
  const child = spawn(process.execPath, [fileURLToPath(new URL(`./fixtures/${fixture}`, import.meta.url)), JSON.stringify(arg)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let buffered = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      onLine(line);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  let exited = false;
  const exit = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => ((exited = true), resolve(signal))));
  return { exit, exited: () => exited, stderr: () => stderr, signal: (signal: NodeJS.Signals) => child.kill(signal) };
}
