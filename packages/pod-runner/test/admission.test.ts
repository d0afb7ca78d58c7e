import { PatchStrategy, setHeaderOptions, type KubernetesObject } from '@kubernetes/client-node';
import { waitFor } from '@rollcall/conformance';
import { requestAs, type RawAnswer } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerName, podRunnerAdmissionPolicies, RUNNER_LABEL, type PodRunner } from '../src/index.js';
import { TASK_RECORD_LABEL } from '../src/task-record.js';
import { admin, exits, podTemplate, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

/**
 * The pod runner's admission policies on the API server, as the runner's
 * account with raw requests (dry runs: nothing is scheduled): every pod outside
 * the service-account list or with a host or privileged setting is refused with the
 * policy's message, so is a write to a ConfigMap that is not a ledger; a
 * runner as that account still runs a task. Generated under names of this
 * file's own and bound by a label only its namespace carries.
 */

let env: { namespace: string; kubeconfig: string };
let policies: Record<string, unknown>[];
let runner: PodRunner | undefined;

/** One request to the API server as the runner's account, no library in between. */
const raw = (method: string, path: string, body?: unknown, contentType?: string) => requestAs(env.kubeconfig, method, path, body, contentType);

type PodSpec = Record<string, unknown>;
const pod = (spec: PodSpec = {}, labels: Record<string, string> = { [RUNNER_LABEL]: 'vap' }) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { generateName: 'vap-', labels }, spec: { containers: [{ name: 'main', image: 'registry.example/task:1' }], ...spec } });
const createPod = (spec?: PodSpec) => raw('POST', `/api/v1/namespaces/${env.namespace}/pods?dryRun=All`, pod(spec));

const SERVICE_ACCOUNT = 'rollcall-pod-runner may create pods only as one of the service accounts default, task-sa';
const PRIVILEGED = 'rollcall-pod-runner may not create privileged containers';
const HOST_PATH = 'rollcall-pod-runner may not create pods with hostPath volumes';
const HOST_NAMESPACES = "rollcall-pod-runner may not create pods in the host's network, PID or IPC namespace";
const OWN_PODS = 'rollcall-pod-runner may change or delete only task pods, labelled rollcall.dev/runner';
const TASK_PODS = 'rollcall-pod-runner may create only task pods, labelled rollcall.dev/runner, and keeps the label';
const LEDGERS = 'rollcall-pod-runner may write only task ledgers, ConfigMaps named pod-runner-<runner>-ledger, and task records, labelled rollcall.dev/task-record before and after the write';

/** Refused by an admission policy, not by RBAC (whose cache may not have the new binding yet). */
const byPolicy = (answer: RawAnswer) => answer.status === 403 && (answer.body.message ?? '').includes('ValidatingAdmissionPolicy');

function refused(answer: RawAnswer, message: string): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(403);
  expect(answer.body.message).toContain('ValidatingAdmissionPolicy');
  expect(answer.body.message).toContain(message);
}

beforeAll(async () => {
  env = await runnerNamespace('vap-runner');
  for (const name of ['task-sa', 'intruder']) await admin.core.createNamespacedServiceAccount({ namespace: env.namespace, body: { metadata: { name } } });
  await admin.core.createNamespacedConfigMap({ namespace: env.namespace, body: { metadata: { name: 'app-config' }, data: { mode: 'safe' } } });
  await admin.core.createNamespacedPod({ namespace: env.namespace, body: { metadata: { name: 'app' }, spec: { containers: [{ name: 'main', image: 'registry.example/app:1' }] } } });
  const label = 'rollcall.dev/admission-test';
  policies = podRunnerAdmissionPolicies({ namePrefix: `rollcall-${env.namespace}`, namespaceSelector: { matchLabels: { [label]: env.namespace } }, serviceAccounts: ['default', 'task-sa'] });
  for (const doc of policies) await admin.objects.create(doc as KubernetesObject);
  await admin.core.patchNamespace({ name: env.namespace, body: { metadata: { labels: { [label]: env.namespace } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  // Each policy takes effect once the API server has compiled it and its binding: a dry run each must refuse, asked until it does.
  await waitFor(async () => byPolicy(await createPod({ hostNetwork: true })) || undefined, 30_000, 'the pods policy to take effect');
  await waitFor(async () => byPolicy(await raw('POST', `/api/v1/namespaces/${env.namespace}/configmaps?dryRun=All`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe' } })) || undefined, 30_000, 'the ConfigMap policy to take effect');
}, 90_000);

afterAll(async () => {
  await runner?.close();
  for (const doc of (policies ?? []).slice().reverse()) await admin.objects.delete(doc as KubernetesObject).catch(() => undefined);
});

describe("the pod runner's admission policies, as its account with raw requests", () => {
  it('a pod may run only as a service account the namespace lists', async () => {
    refused(await createPod({ serviceAccountName: 'intruder' }), SERVICE_ACCOUNT);
    expect((await createPod({ serviceAccountName: 'task-sa' })).status).toBe(201);
    expect((await createPod()).status).toBe(201);
  });

  it('no privileged container, in containers or initContainers', async () => {
    refused(await createPod({ containers: [{ name: 'main', image: 'registry.example/task:1', securityContext: { privileged: true } }] }), PRIVILEGED);
    refused(await createPod({ initContainers: [{ name: 'init', image: 'registry.example/task:1', securityContext: { privileged: true } }] }), PRIVILEGED);
    expect((await createPod({ containers: [{ name: 'main', image: 'registry.example/task:1', securityContext: { privileged: false } }] })).status).toBe(201);
  });

  it('no hostPath volume, no host network, PID or IPC namespace', async () => {
    refused(await createPod({ volumes: [{ name: 'root', hostPath: { path: '/' } }] }), HOST_PATH);
    refused(await createPod({ hostNetwork: true }), HOST_NAMESPACES);
    refused(await createPod({ hostPID: true }), HOST_NAMESPACES);
    refused(await createPod({ hostIPC: true }), HOST_NAMESPACES);
    expect((await createPod({ volumes: [{ name: 'scratch', emptyDir: {} }] })).status).toBe(201);
  });

  it('the runner creates, changes and deletes only task pods, though its Role reaches every pod', async () => {
    refused(await raw('POST', `/api/v1/namespaces/${env.namespace}/pods?dryRun=All`, pod({}, {})), TASK_PODS);
    refused(await raw('PATCH', `/api/v1/namespaces/${env.namespace}/pods/app`, { metadata: { labels: { [RUNNER_LABEL]: 'vap' } } }, 'application/merge-patch+json'), OWN_PODS);
    refused(await raw('DELETE', `/api/v1/namespaces/${env.namespace}/pods/app`), OWN_PODS);
    expect((await admin.core.readNamespacedPod({ name: 'app', namespace: env.namespace })).metadata!.labels?.[RUNNER_LABEL]).toBeUndefined();
  });

  it('the runner writes no ConfigMap but its ledgers, though its Role allows any', async () => {
    refused(await raw('PATCH', `/api/v1/namespaces/${env.namespace}/configmaps/app-config`, { data: { mode: 'unsafe' } }, 'application/merge-patch+json'), LEDGERS);
    refused(await raw('POST', `/api/v1/namespaces/${env.namespace}/configmaps?dryRun=All`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' } }), LEDGERS);
    expect((await raw('POST', `/api/v1/namespaces/${env.namespace}/configmaps?dryRun=All`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: ledgerName('other') } })).status).toBe(201);
  });

  it('the runner writes task records, labelled rollcall.dev/task-record, and keeps the label: no ConfigMap becomes or stops being one', async () => {
    const record = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { [TASK_RECORD_LABEL]: 'vap' } }, data: { format: '2' } });
    expect((await raw('POST', `/api/v1/namespaces/${env.namespace}/configmaps?dryRun=All`, record('vap-task-a-0000000'))).status).toBe(201);
    expect((await raw('POST', `/api/v1/namespaces/${env.namespace}/configmaps`, record('vap-task-b-0000000'))).status).toBe(201);
    expect((await raw('PATCH', `/api/v1/namespaces/${env.namespace}/configmaps/vap-task-b-0000000`, { metadata: { annotations: { 'rollcall.dev/cancel-requested': 'x' } } }, 'application/merge-patch+json')).status).toBe(200);
    refused(await raw('PATCH', `/api/v1/namespaces/${env.namespace}/configmaps/vap-task-b-0000000`, { metadata: { labels: { [TASK_RECORD_LABEL]: null } } }, 'application/merge-patch+json'), LEDGERS);
    refused(await raw('PATCH', `/api/v1/namespaces/${env.namespace}/configmaps/app-config`, { metadata: { labels: { [TASK_RECORD_LABEL]: 'vap' } }, data: { mode: 'unsafe' } }, 'application/merge-patch+json'), LEDGERS);
    expect((await admin.core.readNamespacedConfigMap({ name: 'app-config', namespace: env.namespace })).data).toEqual({ mode: 'safe' });
  });

  it('a template that breaks a rule fails createPodRunner with the policy\'s message (its dry run is refused)', async () => {
    const started = startRunner(env, { name: 'vap-bad', templates: [{ name: 'default', template: podTemplate({ hostPID: true }) }] });
    await expect(started).rejects.toMatchObject({ code: 'PERMISSION_DENIED', message: expect.stringContaining(HOST_NAMESPACES) });
  });

  it('a runner as the account still runs a task to its end (its ledger, its pod, the status and finalizer patches, the delete)', async () => {
    runner = await startRunner(env);
    await runner.submit({ taskId: 'vap-ok', taskType: 'report', ...exits(0, { message: 'done' }) });
    const result = await runner.result('vap-ok');
    expect(result.phase).toBe('succeeded');
    await waitFor(async () => (await runnerPods(env.namespace)).length === 0 || undefined, 15_000, 'the finished pod released and deleted by the runner');
  });
});
