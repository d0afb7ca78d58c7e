import etcd3 from 'etcd3';
import { InvalidArgumentError, PermissionError, RegistryError, RevisionTooOldError, UnavailableError } from '@rollcall/core';

export const BACKEND = 'etcd';

/** What the failed call was, for the message: operation, key and the context a user needs to fix it. */
export interface CallContext {
  /** e.g. `update member/worker/w1`, `watch /rollcall/orders/`. */
  what: string;
  /** The etcd key or key prefix the call touched. */
  etcdKey: string;
  /** The user the client authenticates as, when it does. */
  username: string | undefined;
}

// etcd's own messages that name a condition rather than a gRPC status.
const UNAVAILABLE_MESSAGES = [
  'etcdserver: no leader',
  'etcdserver: leader changed',
  'etcdserver: request timed out',
  'etcdserver: server stopped',
  'etcdserver: too many requests',
  'etcdserver: not capable',
  'etcdserver: not enough started members',
];

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Translates an etcd3 / gRPC error into the RegistryError core branches on.
 * Messages name the call and the user, never a password or token.
 */
export function toRegistryError(err: unknown, context: CallContext): RegistryError {
  if (err instanceof RegistryError) return err;
  // Errors of streams (watch) come from gRPC untyped, with a numeric status code.
  if (err instanceof Error && err.constructor === Error && typeof (err as { code?: unknown }).code === 'number') err = etcd3.castGrpcError(err);
  const message = messageOf(err);
  const user = context.username === undefined ? 'without authentication' : `as user ${JSON.stringify(context.username)}`;
  const options = { backend: BACKEND, cause: err };

  if (err instanceof etcd3.EtcdPermissionDeniedError || /etcdserver: permission denied/.test(message)) {
    return new PermissionError('PERMISSION_DENIED', `${context.what}: permission denied ${user}; the user needs a role with readwrite on the key prefix ${context.etcdKey}`, options);
  }
  if (err instanceof etcd3.EtcdAuthenticationFailedError || /authentication failed|invalid user ID or password/.test(message)) {
    return new PermissionError('UNAUTHENTICATED', `${context.what}: etcd refused the credentials ${user} (invalid user or password)`, options);
  }
  if (err instanceof etcd3.EtcdInvalidAuthTokenError || err instanceof etcd3.GRPCUnauthenticatedError || /user name is empty|auth: revision in header is old|invalid auth token/.test(message)) {
    return new PermissionError('UNAUTHENTICATED', `${context.what}: etcd did not accept the authentication ${user}: ${message}`, options);
  }
  if (/etcdserver: authentication is not enabled/.test(message)) {
    return new PermissionError('UNAUTHENTICATED', `${context.what}: a username is configured but authentication is not enabled on this etcd`, options);
  }
  if (/mvcc: required revision has been compacted/.test(message)) {
    return new RevisionTooOldError(`${context.what}: the revision has been compacted`, options);
  }
  if (/etcdserver: request is too large|exceeds maximum/.test(message) || err instanceof etcd3.GRPCResourceExhastedError && /message larger than max/.test(message)) {
    return new InvalidArgumentError(`${context.what}: the record is larger than the server accepts (--max-request-bytes): ${message}`, { ...options, code: 'PAYLOAD_TOO_LARGE' });
  }
  if (
    err instanceof etcd3.GRPCUnavailableError ||
    err instanceof etcd3.GRPCDeadlineExceededError ||
    err instanceof etcd3.GRPCCancelledError ||
    err instanceof etcd3.GRPCInternalError ||
    err instanceof etcd3.GRPCUnknownError ||
    err instanceof etcd3.EtcdWatchStreamEnded ||
    err instanceof etcd3.ClientClosedError ||
    (err instanceof Error && err.name === 'BrokenCircuitError') ||
    UNAVAILABLE_MESSAGES.some((m) => message.includes(m))
  ) {
    return new UnavailableError(`${context.what}: etcd did not answer: ${message}`, options);
  }
  return new RegistryError('INTERNAL', `${context.what}: unexpected answer from etcd: ${message}`, options);
}
