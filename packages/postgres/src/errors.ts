import { ConfigurationError, PermissionError, RegistryError, SchemaMismatchError, UnavailableError } from '@rollcall/core';

export const BACKEND = 'postgres';

/** The slice of a pg error we read: a server error has a SQLSTATE `code` and a `severity`. */
interface PgErrorLike {
  code?: string;
  severity?: string;
  message?: string;
}

const codeOf = (error: unknown): string => String((error as PgErrorLike)?.code ?? '');
const messageOf = (error: unknown): string => String((error as PgErrorLike)?.message ?? error);
const isServerError = (error: unknown): boolean => typeof (error as PgErrorLike)?.severity === 'string';

const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** pg's own errors when a connection fails or hangs; they carry no code. */
const CLIENT_SIDE = /Connection terminated|timeout|Client has encountered a connection error|Connection ended|not queryable|Client was closed|The server does not support SSL/i;

const TLS_TRUST = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS|ERR_SSL/;

/**
 * SQLSTATE classes and codes that mean "the server is not there for us now":
 * 08 connection exception, 57P01-57P03 shutdown and startup, 53300 too many
 * connections, 57014 a statement timeout, 25006 a read-only server (a standby
 * during failover), 55P03 a lock wait timeout.
 */
const unavailableState = (code: string): boolean => code.startsWith('08') || ['57P01', '57P02', '57P03', '53300', '57014', '25006', '55P03', '40001', '40P01'].includes(code);

export const isDuplicateKey = (error: unknown): boolean => codeOf(error) === '23505';
export const isMissingTable = (error: unknown): boolean => codeOf(error) === '42P01';
export const isMissingColumn = (error: unknown): boolean => codeOf(error) === '42703';
export const isPermissionDenied = (error: unknown): boolean => codeOf(error) === '42501';
/** The server rolled the transaction back (serialization failure, deadlock): nothing was written, try again. */
export const isRetryable = (error: unknown): boolean => ['40001', '40P01'].includes(codeOf(error));
/** A failure after which a connection's state is unknown: it must not go back to the pool. */
export const isConnectionBroken = (error: unknown): boolean => !isServerError(error) || codeOf(error).startsWith('08') || codeOf(error).startsWith('57P');

/**
 * A native pg error as a RegistryError. `where` is `host:port`, never anything
 * secret; the server's messages name the user but never the password.
 */
export function toRegistryError(error: unknown, operation: string, where: string, database: string, schema: string): RegistryError {
  if (error instanceof RegistryError) return error;
  const code = codeOf(error);
  const options = { backend: BACKEND, cause: error };
  if (code === '28P01' || code === '28000') {
    return new PermissionError('UNAUTHENTICATED', `${operation}: ${where} refused the user name and password (SQLSTATE ${code})`, options);
  }
  if (isPermissionDenied(error)) return new PermissionError('PERMISSION_DENIED', `${operation}: ${messageOf(error)} (SQLSTATE ${code})`, options);
  if (code === '3D000') {
    return new ConfigurationError(`registry.postgres.database: the database ${database} does not exist on ${where}; create it first (CREATE DATABASE ${database})`, {
      ...options,
      key: 'registry.postgres.database',
    });
  }
  if (code === '3F000') {
    return new ConfigurationError(`registry.postgres.schema: the schema ${schema} does not exist in ${database}; create it first (CREATE SCHEMA ${schema})`, {
      ...options,
      key: 'registry.postgres.schema',
    });
  }
  if (/The server does not support SSL/i.test(messageOf(error))) {
    return new ConfigurationError(`registry.postgres.tls.enabled: ${where} does not support TLS`, { ...options, key: 'registry.postgres.tls.enabled' });
  }
  if (TLS_TRUST.test(code)) {
    return new ConfigurationError(`registry.postgres.tls.caFile: the certificate of ${where} was not trusted (${code})`, { ...options, key: 'registry.postgres.tls.caFile' });
  }
  if (isMissingTable(error) || isMissingColumn(error)) {
    return new SchemaMismatchError(`${operation}: the Rollcall tables in ${database}.${schema} were changed or dropped while in use: ${messageOf(error)}`, options);
  }
  if (NETWORK.has(code) || unavailableState(code) || (!isServerError(error) && CLIENT_SIDE.test(messageOf(error)))) {
    return new UnavailableError(`${operation}: ${where} is unreachable or did not answer (${code || messageOf(error)})`, options);
  }
  return new RegistryError('INTERNAL', `${operation}: unexpected PostgreSQL error ${code}: ${messageOf(error)}`, options);
}
