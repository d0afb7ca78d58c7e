import { KubeAdmin, KWOK_POD_ANNOTATIONS, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import type { V1Pod } from '@kubernetes/client-node';
import { createPodRunner, type PodRunner, type PodRunnerOptions, type PodTemplateSpec, RUNNER_LABEL, type Task } from '../src/index.js';

export const admin = new KubeAdmin();

/** A fresh namespace with the shipped rollcall-pod-runner Role bound to its service account, and a kubeconfig with that account's token. */
export async function runnerNamespace(prefix: string): Promise<{ namespace: string; kubeconfig: string }> {
  const namespace = await admin.namespace(prefix, { forPods: true });
  await admin.applyManifest('rollcall-pod-runner.yaml', namespace);
  return { namespace, kubeconfig: await serviceAccountKubeconfig(namespace, 'rollcall-pod-runner') };
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

/** Every pod of a runner in the namespace, as the API server has them now. */
export async function runnerPods(namespace: string, runner = 'rollcall'): Promise<V1Pod[]> {
  return (await admin.core.listNamespacedPod({ namespace, labelSelector: `${RUNNER_LABEL}=${runner}` })).items;
}
