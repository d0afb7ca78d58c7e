import { hasCode, type RegistryError, StoreConflictError } from '@rollcall/core';
import { BACKEND, isRequeueable } from './errors.js';
import { type Pod, SPEC_HASH_ANNOTATION } from './pod.js';
import type { PodsApi } from './pods-api.js';

/**
 * How creating a task's pod went:
 * - `created`, `adopted` (a pod of that name with the same spec hash existed:
 *   a retry after a lost answer, or another runner's) — `pod` as answered;
 * - `ended`: the task ended while the create was refused; nothing to do;
 * - `requeue`: a quota refusal, a 429 or a quota race: try again later;
 * - `fenced`: not sent, this runner's term may be over: the task waits for whoever leads;
 * - `failed`: the task fails with `reason`, and `error` is what submit rejects with.
 */
export type CreateOutcome =
  | { outcome: 'created' | 'adopted'; pod: Pod }
  | { outcome: 'ended' }
  | { outcome: 'requeue'; error: RegistryError }
  | { outcome: 'fenced' }
  | { outcome: 'failed'; reason: 'CreateFailed' | 'SpecConflict'; error: unknown };

/**
 * Creates a task's pod and classifies the answer; the runner applies it. Only a
 * failure to read an existing pod of that name rejects. `ended` says whether the
 * task ended meanwhile (a cancel during the request).
 */
export async function createTaskPod(api: PodsApi, pod: Pod, specHash: string | undefined, ended: () => boolean): Promise<CreateOutcome> {
  try {
    return { outcome: 'created', pod: await api.create(pod) };
  } catch (err) {
    if (ended()) return { outcome: 'ended' };
    if (hasCode(err, 'LEASE_LOST')) return { outcome: 'fenced' };
    if (hasCode(err, 'ALREADY_EXISTS')) return adopt(api, pod.metadata.name, specHash);
    if (isRequeueable(err)) return { outcome: 'requeue', error: err as RegistryError };
    return { outcome: 'failed', reason: 'CreateFailed', error: err };
  }
}

/** A pod of this name exists: adopt it only when it is the same pod. */
async function adopt(api: PodsApi, name: string, specHash: string | undefined): Promise<CreateOutcome> {
  const existing = await api.get(name);
  const theirs = existing.metadata.annotations?.[SPEC_HASH_ANNOTATION];
  if (theirs === specHash) return { outcome: 'adopted', pod: existing };
  const error = new StoreConflictError('CONFLICT', `pod ${name} exists in namespace ${api.namespace} with another spec (spec hash ${theirs ?? 'none'}, this task's ${specHash}); it was not adopted`, { backend: BACKEND });
  return { outcome: 'failed', reason: 'SpecConflict', error };
}
