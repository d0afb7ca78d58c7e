import { ConfigurationError, PermissionError, RegistryError, SchemaMismatchError, UnavailableError } from '@rollcall/core';

export const BACKEND = 'mysql';

/** The slice of a mysql2 error we read. */
interface MysqlErrorLike {
  code?: string;
  errno?: number;
  message?: string;
  fatal?: boolean;
}

const codeOf = (error: unknown): string => String((error as MysqlErrorLike)?.code ?? '');
const messageOf = (error: unknown): string => String((error as MysqlErrorLike)?.message ?? error);

const NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOENT', // a socketPath that is not there (yet)
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  'PROTOCOL_ENQUEUE_AFTER_QUIT',
  'ER_SERVER_SHUTDOWN',
  'ER_CON_COUNT_ERROR',
  'ER_TOO_MANY_USER_CONNECTIONS',
  'ER_CONNECTION_KILLED',
  'ER_QUERY_INTERRUPTED',
  'ER_CLIENT_INTERACTION_TIMEOUT',
  'ER_OPTION_PREVENTS_STATEMENT', // a read-only server, e.g. a replica during failover
  'ER_LOCK_WAIT_TIMEOUT',
  'ER_LOCK_DEADLOCK',
]);

const TLS_TRUST = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS|ERR_SSL/;

export const isDuplicateKey = (error: unknown): boolean => codeOf(error) === 'ER_DUP_ENTRY';
export const isMissingTable = (error: unknown): boolean => codeOf(error) === 'ER_NO_SUCH_TABLE';
export const isMissingColumn = (error: unknown): boolean => codeOf(error) === 'ER_BAD_FIELD_ERROR';
export const isPermissionDenied = (error: unknown): boolean =>
  ['ER_TABLEACCESS_DENIED_ERROR', 'ER_COLUMNACCESS_DENIED_ERROR', 'ER_DBACCESS_DENIED_ERROR', 'ER_SPECIFIC_ACCESS_DENIED_ERROR'].includes(codeOf(error));
/** InnoDB rolled the transaction back: nothing was written, try again. */
export const isRetryable = (error: unknown): boolean => ['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT'].includes(codeOf(error));

/**
 * A native mysql2 error as a RegistryError. `where` is `host:port` or the
 * socket, never anything secret; the server's own messages name the user but
 * never the password.
 */
export function toRegistryError(error: unknown, operation: string, where: string, database: string): RegistryError {
  if (error instanceof RegistryError) return error;
  const code = codeOf(error);
  const options = { backend: BACKEND, cause: error };
  if (code === 'ER_ACCESS_DENIED_ERROR' || code === 'ER_NOT_SUPPORTED_AUTH_MODE' || code === 'ER_ACCESS_DENIED_NO_PASSWORD_ERROR') {
    return new PermissionError('UNAUTHENTICATED', `${operation}: ${where} refused the user name and password (${code})`, options);
  }
  if (isPermissionDenied(error)) return new PermissionError('PERMISSION_DENIED', `${operation}: ${messageOf(error)} (${code})`, options);
  if (code === 'ER_BAD_DB_ERROR') {
    return new ConfigurationError(`registry.mysql.database: the database ${database} does not exist on ${where}; create it first (CREATE DATABASE ${database})`, { ...options, key: 'registry.mysql.database' });
  }
  if (code === 'HANDSHAKE_NO_SSL_SUPPORT') {
    return new ConfigurationError(`registry.mysql.tls.enabled: ${where} does not support TLS`, { ...options, key: 'registry.mysql.tls.enabled' });
  }
  if (TLS_TRUST.test(code)) {
    return new ConfigurationError(`registry.mysql.tls.caFile: the certificate of ${where} was not trusted (${code})`, { ...options, key: 'registry.mysql.tls.caFile' });
  }
  if (isMissingTable(error) || isMissingColumn(error)) {
    return new SchemaMismatchError(`${operation}: the Rollcall tables in ${database} were changed or dropped while in use: ${messageOf(error)}`, options);
  }
  // mysql2's pool refuses a call past its queueLimit with this message and no code.
  if (messageOf(error) === 'Queue limit reached.') {
    return new UnavailableError(`${operation}: every connection of the pool to ${where} is busy and its queue of waiting calls is full; the server may be slow, or poolSize too small for the load`, options);
  }
  if (NETWORK.has(code) || (error as MysqlErrorLike)?.fatal) {
    return new UnavailableError(`${operation}: ${where} is unreachable or did not answer (${code || messageOf(error)})`, options);
  }
  return new RegistryError('INTERNAL', `${operation}: unexpected MySQL error ${code}: ${messageOf(error)}`, options);
}
