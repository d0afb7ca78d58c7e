import { ConfigurationError, DEFAULT_REQUEST_TIMEOUT_MS } from '@rollcall/core';
import { loadKubeConfig, resolveNamespace, userAgent } from '@rollcall/kube-client';
import { ObservedApiClient } from './observed-client.js';
import { DEFAULT_RUNNER_NAME, type PodRunnerOptions } from './options.js';
import { BACKEND } from './errors.js';
import { PodRunner } from './runner.js';
import { resolveTemplates } from './templates.js';

/** A runner's name: a DNS label short enough to prefix its pods' names. */
const RUNNER_NAME = /^[a-z0-9]([-a-z0-9]{0,28}[a-z0-9])?$/;

/**
 * Starts a pod runner: loads the kubeconfig, reads every template (files,
 * PodTemplates), validates each with a server-side dry run, lists the runner's
 * pods to re-attach to them, and opens the one watch. Rejects with
 * INVALID_CONFIG for a bad option or template, PERMISSION_DENIED when the
 * identity may not create or watch pods.
 */
export async function createPodRunner(options: PodRunnerOptions): Promise<PodRunner> {
  const name = options.name ?? DEFAULT_RUNNER_NAME;
  if (!RUNNER_NAME.test(name)) throw new ConfigurationError(`name ${JSON.stringify(name)} is not valid: a DNS label of at most 30 characters`, { key: 'name', backend: BACKEND });
  for (const [key, value] of Object.entries({ 'capacity.total': options.capacity?.total, ...Object.fromEntries(Object.entries(options.capacity?.perType ?? {}).map(([t, v]) => [`capacity.perType.${t}`, v])) })) {
    if (value !== undefined && (!Number.isInteger(value) || value < 1)) throw new ConfigurationError(`${key} ${value} is not valid: a whole number, 1 or more`, { key, backend: BACKEND });
  }
  for (const [key, value] of Object.entries(options.timeouts ?? {})) {
    if (value !== undefined && (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value))) throw new ConfigurationError(`timeouts.${key} ${value} is not valid: a positive number of milliseconds`, { key: `timeouts.${key}`, backend: BACKEND });
  }
  for (const [key, value] of Object.entries({ 'ledger.retainDoneMs': options.ledger?.retainDoneMs, 'ledger.maxDone': options.ledger?.maxDone })) {
    if (value !== undefined && (!Number.isInteger(value) || value < 1)) throw new ConfigurationError(`${key} ${value} is not valid: a whole number, 1 or more`, { key, backend: BACKEND });
  }
  const kc = options.kubeConfig ?? loadKubeConfig(options);
  const namespace = resolveNamespace(options.namespace, kc);
  const client = new ObservedApiClient(kc, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, userAgent(options.identity));
  try {
    const templates = await resolveTemplates(options.templates, client, namespace);
    const runner = new PodRunner(client, namespace, name, templates, options);
    await runner.validateTemplates();
    await runner.start();
    return runner;
  } catch (err) {
    client.close();
    throw err;
  }
}
