import { RegistryError, UnavailableError } from '@rollcall/core';
import type { KubeStatus } from '@rollcall/kube-client';
import type { RequeueReason } from '@rollcall/pod-runner-activity';

/** The `backend` of the runner's errors. */
export const BACKEND = 'pod-runner';

/** A call only the runner election's leader may make. */
export function notLeader(name: string): RegistryError {
  return new UnavailableError(`this runner does not lead pod-runner-${name}: only the leader cancels and cleans up pods`, { backend: BACKEND });
}

/**
 * A quota refusal, a 429, or a 409 Conflict on create (the quota admission
 * lost a race updating the ResourceQuota's usage: "the object has been
 * modified"): the task waits in the queue and is created later.
 */
export function isRequeueable(err: unknown): boolean {
  if (!(err instanceof RegistryError)) return false;
  if (err.code === 'CONFLICT') return true;
  const status = err.cause as KubeStatus | undefined;
  if (status?.code === 429 || status?.reason === 'TooManyRequests') return true;
  return err.code === 'PERMISSION_DENIED' && /exceeded quota/i.test(status?.message ?? '');
}

/** Which refusal {@link isRequeueable} accepted (or `Unavailable`: a create without an answer whose pod was not found), as a metric names it. */
export function requeueReason(err: RegistryError): RequeueReason {
  if (err.code === 'UNAVAILABLE') return 'Unavailable';
  const status = err.cause as KubeStatus | undefined;
  if (status?.code === 429 || status?.reason === 'TooManyRequests') return 'TooManyRequests';
  return err.code === 'CONFLICT' ? 'Conflict' : 'QuotaExceeded';
}
