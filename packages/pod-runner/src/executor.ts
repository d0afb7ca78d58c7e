import { hasCode, RegistryError, StoreConflictError, UnavailableError } from '@rollcall/core';
import { BACKEND, isRequeueable } from './errors.js';
import { type Pod, SPEC_HASH_ANNOTATION } from './pod.js';
import type { PodsApi } from './pods-api.js';

/**
 * How creating a task's pod went:
 * - `created`, `adopted` (a pod of that name with the same spec hash existed:
 *   a create whose answer was lost but which landed, a retry after one, or
 *   another runner's) — `pod` as answered or read back;
 * - `ended`: the task ended while the create was refused; nothing to do;
 * - `requeue`: a quota refusal, a 429 or a quota race — or no answer (a
 *   timeout, a 5xx, a reset connection) and no pod found by its name: try again later;
 * - `fenced`: not sent, this runner's term may be over: the task waits for whoever leads;
 * - `failed`: the API server refused the pod (400/422 and the other definite
 *   refusals: 401, 403, 404, 413), or a pod of that name has another spec; the
 *   task fails with `reason`, and `error` is what submit rejects with.
 */
export type CreateOutcome =
  | { outcome: 'created' | 'adopted'; pod: Pod }
  | { outcome: 'ended' }
  | { outcome: 'requeue'; error: RegistryError }
  | { outcome: 'fenced' }
  | { outcome: 'failed'; reason: 'CreateFailed' | 'SpecConflict'; error: unknown };

/** What a create's error says: whether the pod may exist. */
export type CreateAnswer = 'fenced' | 'exists' | 'requeue' | 'refused' | 'uncertain';

/**
 * Classifies a create's error. `refused` only where the API server answered
 * that it stored nothing (a 4xx it maps to a code); `uncertain` where no
 * answer says so — a timeout, a reset, a 5xx (UNAVAILABLE) or an error that is
 * not the client's: the pod may have landed.
 */
export function classifyCreateError(err: unknown): CreateAnswer {
  if (hasCode(err, 'LEASE_LOST')) return 'fenced';
  if (hasCode(err, 'ALREADY_EXISTS')) return 'exists';
  if (isRequeueable(err)) return 'requeue';
  if (err instanceof RegistryError && ['INVALID_ARGUMENT', 'PAYLOAD_TOO_LARGE', 'PERMISSION_DENIED', 'UNAUTHENTICATED', 'NOT_FOUND'].includes(err.code)) return 'refused';
  return 'uncertain';
}

/** The pod requests the executor makes. */
export type CreatePodsApi = Pick<PodsApi, 'create' | 'get' | 'namespace'>;

/**
 * Creates a task's pod and classifies the answer; the runner applies it. Only a
 * failure to read an existing pod of that name rejects. `ended` says whether the
 * task ended meanwhile (a cancel during the request). A create without an
 * answer is resolved by reading the pod back by its name (deterministic per
 * attempt): adopted when it landed, requeued (to be created again) when not.
 */
export async function createTaskPod(api: CreatePodsApi, pod: Pod, specHash: string | undefined, ended: () => boolean): Promise<CreateOutcome> {
  try {
    return { outcome: 'created', pod: await api.create(pod) };
  } catch (err) {
    if (ended()) return { outcome: 'ended' };
    switch (classifyCreateError(err)) {
      case 'fenced':
        return { outcome: 'fenced' };
      case 'exists':
        return adopt(api, pod.metadata.name, specHash);
      case 'requeue':
        return { outcome: 'requeue', error: err as RegistryError };
      case 'refused':
        return { outcome: 'failed', reason: 'CreateFailed', error: err };
      case 'uncertain':
        return readBack(api, pod.metadata.name, specHash, err);
    }
  }
}

/** A create without an answer: the pod of that name, adopted when it is this one; none (or no answer again): requeued, and created again. */
async function readBack(api: CreatePodsApi, name: string, specHash: string | undefined, createError: unknown): Promise<CreateOutcome> {
  const requeue = (): CreateOutcome => ({ outcome: 'requeue', error: createError instanceof RegistryError ? createError : new UnavailableError(`creating pod ${name} got no answer: ${String(createError)}`, { backend: BACKEND, cause: createError }) });
  let existing: Pod;
  try {
    existing = await api.get(name);
  } catch {
    // not found: it did not land (or not yet: the next create then answers ALREADY_EXISTS and adopts it);
    // no answer again: the next create resolves it the same way
    return requeue();
  }
  return compare(api, existing, specHash);
}

/** A pod of this name exists: adopt it only when it is the same pod. */
async function adopt(api: CreatePodsApi, name: string, specHash: string | undefined): Promise<CreateOutcome> {
  return compare(api, await api.get(name), specHash);
}

function compare(api: CreatePodsApi, existing: Pod, specHash: string | undefined): CreateOutcome {
  const name = existing.metadata.name;
  const theirs = existing.metadata.annotations?.[SPEC_HASH_ANNOTATION];
  if (theirs === specHash) return { outcome: 'adopted', pod: existing };
  const error = new StoreConflictError('CONFLICT', `pod ${name} exists in namespace ${api.namespace} with another spec (spec hash ${theirs ?? 'none'}, this task's ${specHash}); it was not adopted`, { backend: BACKEND });
  return { outcome: 'failed', reason: 'SpecConflict', error };
}
