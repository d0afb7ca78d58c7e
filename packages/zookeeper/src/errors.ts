import { ErrorCode, InvalidArgumentError, PermissionError, RegistryError, StoreConflictError, UnavailableError } from '@rollcall/core';

export const BACKEND = 'zookeeper';

/** The ZooKeeper error codes this backend tells apart (node-zookeeper-client's `Exception` codes). */
export const ZK = {
  CONNECTION_LOSS: -4,
  OPERATION_TIMEOUT: -7,
  BAD_ARGUMENTS: -8,
  NO_NODE: -101,
  NO_AUTH: -102,
  BAD_VERSION: -103,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
  INVALID_ACL: -114,
  AUTH_FAILED: -115,
} as const;

/** The numeric ZooKeeper code of a native error, if it is one. */
export function zkCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function nativeName(error: unknown): string {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : String(error);
}

/**
 * Maps a native error of operation `what` on record `key` onto a RegistryError
 * code. `what` and `key` name the call and the record, never a credential.
 */
export function mapError(error: unknown, what: string, key?: string): RegistryError {
  if (error instanceof RegistryError) return error;
  const options = { backend: BACKEND, cause: error };
  const on = key === undefined ? what : `${what} ${key}`;
  switch (zkCode(error)) {
    case ZK.NO_NODE:
      return new StoreConflictError('NOT_FOUND', `${on}: the record does not exist`, options);
    case ZK.NODE_EXISTS:
      return new StoreConflictError('ALREADY_EXISTS', `${on}: the record already exists`, options);
    case ZK.BAD_VERSION:
      return new StoreConflictError('CONFLICT', `${on}: the record changed since the version given`, options);
    case ZK.NO_AUTH:
      return new PermissionError(ErrorCode.PERMISSION_DENIED, `${on}: the znode's ACL does not grant this identity the permission (NoAuth)`, options);
    case ZK.AUTH_FAILED:
      return new PermissionError(ErrorCode.UNAUTHENTICATED, `${on}: the server refused the credentials`, options);
    case ZK.INVALID_ACL:
      return new InvalidArgumentError(`${on}: the server refused the ACL`, options);
    case ZK.BAD_ARGUMENTS:
      return new InvalidArgumentError(`${on}: the server refused the arguments`, options);
    case ZK.CONNECTION_LOSS:
    case ZK.OPERATION_TIMEOUT:
    case ZK.SESSION_EXPIRED:
      return new UnavailableError(`${on}: ${nativeName(error)}`, options);
    default:
      return new RegistryError(ErrorCode.INTERNAL, `${on}: unexpected answer ${nativeName(error)}`, options);
  }
}
