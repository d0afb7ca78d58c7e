import { loadKubeConfig, resolveNamespace, userAgent } from '@rollcall/kube-client';
import { ObservedApiClient } from './observed-client.js';
import { resolvePodRunnerOptions, type PodRunnerOptions } from './options.js';
import { PodRunner } from './runner.js';
import { resolveTemplates } from './templates.js';
import type { TestHooks } from './test-hooks.js';

/**
 * Starts a pod runner: validates the options (INVALID_CONFIG naming the key
 * before anything is contacted), loads the kubeconfig, reads every template
 * (files, PodTemplates), validates each with a server-side dry run, lists the
 * runner's pods to re-attach to them, and opens the one watch. Rejects with
 * INVALID_CONFIG for a bad option or template, PERMISSION_DENIED when the
 * identity may not create or watch pods.
 *
 * @param hooks @internal Crash tests' seams (a process killed after each kind of write); never given in production.
 */
export async function createPodRunner(given: PodRunnerOptions, hooks?: TestHooks): Promise<PodRunner> {
  const options = resolvePodRunnerOptions(given);
  const kc = options.kubeConfig ?? loadKubeConfig(options);
  const namespace = resolveNamespace(options.namespace, kc);
  const client = new ObservedApiClient(kc, options.requestTimeoutMs, userAgent(options.identity));
  try {
    const templates = await resolveTemplates(options.templates, client, namespace);
    const runner = new PodRunner(client, namespace, options.name, templates, options, hooks);
    await runner.validateTemplates();
    await runner.start();
    return runner;
  } catch (err) {
    client.close();
    throw err;
  }
}
