import { InvalidArgumentError, PermissionError, RegistryError, RevisionTooOldError, StoreConflictError, UnavailableError } from '@rollcall/core';

/** The `backend` of every error this client maps. */
export const BACKEND = 'kubernetes';

/** The part of a Kubernetes `Status` the mapping reads. */
export interface KubeStatus {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
  details?: { name?: string; kind?: string; group?: string };
}

/** What a request was doing, for messages that say what was refused. */
export interface RequestContext {
  verb: string;
  /** `leases.coordination.k8s.io` or `configmaps`. */
  resource: string;
  namespace: string;
  name?: string;
}

function describe(ctx: RequestContext): string {
  return `${ctx.verb} ${ctx.resource}${ctx.name ? ` ${ctx.name}` : ''} in namespace ${ctx.namespace}`;
}

/** Maps an API answer that is not a success onto Rollcall's codes. The server's message never holds a credential. */
export function statusError(httpStatus: number, status: KubeStatus | undefined, ctx: RequestContext): RegistryError {
  const detail = status?.message ? `: ${status.message}` : '';
  const options = { backend: BACKEND, cause: status };
  switch (httpStatus) {
    case 401:
      return new PermissionError('UNAUTHENTICATED', `the API server refused the credentials (${describe(ctx)})`, options);
    case 403:
      return new PermissionError('PERMISSION_DENIED', `permission denied: cannot ${describe(ctx)}${detail}`, options);
    case 404:
      return new StoreConflictError('NOT_FOUND', `not found: ${describe(ctx)}${detail}`, options);
    case 409:
      return status?.reason === 'AlreadyExists'
        ? new StoreConflictError('ALREADY_EXISTS', `already exists: ${describe(ctx)}`, options)
        : new StoreConflictError('CONFLICT', `conflict: ${describe(ctx)} names an old resourceVersion`, options);
    case 410:
      return new RevisionTooOldError(`resourceVersion too old: ${describe(ctx)}${detail}`, options);
    case 413:
      return new InvalidArgumentError(`the object is too large: ${describe(ctx)}${detail}`, { ...options, code: 'PAYLOAD_TOO_LARGE' });
    case 400:
    case 422:
      return new InvalidArgumentError(`the API server rejected ${describe(ctx)}${detail}`, options);
    default:
      return new UnavailableError(`the API server answered ${httpStatus} to ${describe(ctx)}${detail}`, options);
  }
}

/** A transport failure: refused connection, TLS failure, timeout. */
export function transportError(err: unknown, ctx: RequestContext): RegistryError {
  const code = (err as { code?: string }).code;
  return new UnavailableError(`cannot reach the API server to ${describe(ctx)}${code ? ` (${code})` : ''}: ${(err as Error).message}`, { backend: BACKEND, cause: err });
}
