import { RegistryError } from '@rollcall/core';
import type { KubeStatus } from '@rollcall/kube-client';
import { UNSEEN } from './term-fence.js';

/**
 * What the API server's answer to a pod create means for the task, as the
 * second-generation runner applies it:
 * - `exists` (409 AlreadyExists): read the pod back; adopted when its spec hash is the task's;
 * - `requeue` (a quota 403, a 429): nothing stored; wait for capacity (admission pauses);
 * - `failed` (400/422, 413): the server will never take this pod; the attempt ends `CreateFailed` — but not a
 *   fencing policy's 422 "no params found" (its API server has not yet seen a new term Lease): that is `held`;
 * - `uncertain` (a timeout, a reset, a 5xx): the pod may have landed; the expectation stays and the sync resolves it;
 * - `held` (any other refusal: a fencing policy's 403, a stale term, 401, 404): nothing stored,
 *   and not the task's fault; the sync tries again after its backoff, or the next term does.
 */
export type PodCreateAnswer = 'exists' | 'requeue' | 'failed' | 'uncertain' | 'held';

/** Classifies a pod create's error ({@link PodCreateAnswer}). */
export function classifyPodCreate(err: unknown): PodCreateAnswer {
  if (!(err instanceof RegistryError)) return 'uncertain';
  if (err.code === 'ALREADY_EXISTS') return 'exists';
  const status = err.cause as KubeStatus | undefined;
  if (status?.code === 429 || status?.reason === 'TooManyRequests') return 'requeue';
  if (err.code === 'PERMISSION_DENIED' && /exceeded quota/i.test(status?.message ?? '')) return 'requeue';
  // the policy's param cache is behind the term Lease: the pod is sound, the next try (or term) gets through
  if (UNSEEN.some((m) => (status?.message ?? err.message).includes(m))) return 'held';
  if (err.code === 'INVALID_ARGUMENT' || err.code === 'PAYLOAD_TOO_LARGE') return 'failed';
  if (err.code === 'UNAVAILABLE') return 'uncertain';
  return 'held';
}
