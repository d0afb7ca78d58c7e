import { ConfigurationError, PermissionError, RegistryError, UnavailableError } from '@rollcall/core';

export const BACKEND = 'sqlite';

/** The slice of better-sqlite3's SqliteError we read. */
interface SqliteErrorLike {
  code?: string;
  message?: string;
}

function codeOf(error: unknown): string {
  return typeof (error as SqliteErrorLike)?.code === 'string' ? (error as SqliteErrorLike).code! : '';
}

function messageOf(error: unknown): string {
  return String((error as SqliteErrorLike)?.message ?? error);
}

export const isBusy = (error: unknown): boolean => /^SQLITE_(BUSY|LOCKED)/.test(codeOf(error));
export const isDuplicateKey = (error: unknown): boolean => /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(codeOf(error));
export const isMissingTable = (error: unknown): boolean => codeOf(error) === 'SQLITE_ERROR' && /no such table/i.test(messageOf(error));
export const isMissingColumn = (error: unknown): boolean => codeOf(error) === 'SQLITE_ERROR' && /no such column|has no column named/i.test(messageOf(error));
export const isPermissionDenied = (error: unknown): boolean => /^SQLITE_(READONLY|PERM|AUTH)/.test(codeOf(error));

/** A native SQLite error as a RegistryError: what failed, in words, with the native error as cause. */
export function toRegistryError(error: unknown, operation: string, path: string, readOnly = false): RegistryError {
  if (error instanceof RegistryError) return error;
  const code = codeOf(error);
  const options = { backend: BACKEND, cause: error };
  if (isBusy(error)) return new UnavailableError(`${operation}: ${path} stayed locked by another process (${code}); retried until the request timeout`, options);
  if (readOnly && isPermissionDenied(error)) return new PermissionError('PERMISSION_DENIED', `${operation}: ${path} was opened read-only (registry.sqlite.readOnly), so nothing is written (${code})`, options);
  if (isPermissionDenied(error)) return new PermissionError('PERMISSION_DENIED', `${operation}: ${path} may not be written by this process (${code}): check the file's and its directory's permissions`, options);
  if (code.startsWith('SQLITE_CANTOPEN')) {
    return new ConfigurationError(`registry.sqlite.path: cannot open ${path} (${code}): the directory must exist and be writable`, { ...options, key: 'registry.sqlite.path' });
  }
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    return new ConfigurationError(`registry.sqlite.path: ${path} is not a usable SQLite database (${code})`, { ...options, key: 'registry.sqlite.path' });
  }
  if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')) return new UnavailableError(`${operation}: writing ${path} failed (${code})`, options);
  if (isMissingTable(error) || isMissingColumn(error)) {
    return new RegistryError('SCHEMA_MISMATCH', `${operation}: the Rollcall tables in ${path} were changed or dropped while in use: ${messageOf(error)}`, options);
  }
  return new RegistryError('INTERNAL', `${operation}: unexpected SQLite error ${code || ''}: ${messageOf(error)}`, options);
}
