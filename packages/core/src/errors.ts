/**
 * Stable error codes. Tests assert these, never messages; the README lists them.
 * A code never changes meaning once published.
 */
export const ErrorCode = {
  /** A configuration key is unknown, has the wrong type, or breaks a rule. */
  INVALID_CONFIG: 'INVALID_CONFIG',
  /** `registry.type` names a plugin whose package is not installed. */
  PLUGIN_NOT_INSTALLED: 'PLUGIN_NOT_INSTALLED',
  /** An argument to an API call is invalid (a name, an identity, a timing). */
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  /** A payload is larger than the store accepts. */
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  /** Create-if-absent found a record under the key. */
  ALREADY_EXISTS: 'ALREADY_EXISTS',
  /** A compare-and-set found another version than the one given. */
  CONFLICT: 'CONFLICT',
  /** The record does not exist. */
  NOT_FOUND: 'NOT_FOUND',
  /** A watch was asked to start from a revision the store no longer keeps: relist. */
  REVISION_TOO_OLD: 'REVISION_TOO_OLD',
  /** The backend cannot be reached, or did not answer in time. */
  UNAVAILABLE: 'UNAVAILABLE',
  /** The backend refused the credentials. */
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  /** The identity lacks a permission; the message names what is missing. */
  PERMISSION_DENIED: 'PERMISSION_DENIED',
  /** A stored record could not be decoded. */
  CORRUPT_RECORD: 'CORRUPT_RECORD',
  /** The backend's schema or layout belongs to another version of Rollcall. */
  SCHEMA_MISMATCH: 'SCHEMA_MISMATCH',
  /** `lock()` did not acquire within its `timeoutMs`. */
  LOCK_TIMEOUT: 'LOCK_TIMEOUT',
  /** A lock or leadership is no longer held; the reason says why. */
  LEASE_LOST: 'LEASE_LOST',
  /** A wait was aborted through its AbortSignal. */
  ABORTED: 'ABORTED',
  /** The registry or handle was closed. */
  CLOSED: 'CLOSED',
  /** A bug or an unexpected backend answer. */
  INTERNAL: 'INTERNAL',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface RegistryErrorOptions {
  /** The backend the error comes from: `memory`, `kubernetes`, ... or `core`. Default `core`. */
  backend?: string;
  /** The native error this one translates. */
  cause?: unknown;
}

/** Marks an error as a Rollcall error, whichever copy of @rollcall/core made it. */
const BRAND = Symbol.for('@rollcall/core.RegistryError');

/**
 * Base of every error Rollcall throws. `code` is stable; the message starts with
 * `[rollcall] [<backend>]`.
 *
 * `instanceof` holds across copies of @rollcall/core: a backend installed apart
 * from the application (a global `rollcall` command and a backend installed
 * globally beside it) brings its own copy, and its errors still are the
 * application's `RegistryError`, `UnavailableError`, ... by class name. In a
 * project, the peer dependency keeps one copy.
 */
export class RegistryError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== 'object' || value === null || !(BRAND in value)) return false;
    for (let proto = Object.getPrototypeOf(value) as object | null; proto; proto = Object.getPrototypeOf(proto) as object | null) {
      if ((proto as { constructor?: { name?: string } }).constructor?.name === this.name) return true;
    }
    return false;
  }

  readonly code: ErrorCode;
  readonly backend: string;

  constructor(code: ErrorCode, message: string, options: RegistryErrorOptions = {}) {
    const backend = options.backend ?? 'core';
    super(`[rollcall] [${backend}] ${message}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.backend = backend;
  }
}
Object.defineProperty(RegistryError.prototype, BRAND, { value: true });

/** Configuration that is unknown, mistyped or impossible; also a missing plugin. */
export class ConfigurationError extends RegistryError {
  /** The offending key in flat form, e.g. `registry.election.renewDeadlineMs`. */
  readonly key: string | undefined;
  constructor(message: string, options: RegistryErrorOptions & { key?: string; code?: 'INVALID_CONFIG' | 'PLUGIN_NOT_INSTALLED' } = {}) {
    super(options.code ?? ErrorCode.INVALID_CONFIG, message, options);
    this.key = options.key;
  }
}

/** An invalid name, identity, payload or timing passed to an API call. Nothing was changed. */
export class InvalidArgumentError extends RegistryError {
  constructor(message: string, options: RegistryErrorOptions & { code?: 'INVALID_ARGUMENT' | 'PAYLOAD_TOO_LARGE' } = {}) {
    super(options.code ?? ErrorCode.INVALID_ARGUMENT, message, options);
  }
}

/** A store write lost a race: ALREADY_EXISTS, CONFLICT or NOT_FOUND. */
export class StoreConflictError extends RegistryError {
  constructor(code: 'ALREADY_EXISTS' | 'CONFLICT' | 'NOT_FOUND', message: string, options: RegistryErrorOptions = {}) {
    super(code, message, options);
  }
}

/** The watch revision was compacted away; the caller must relist. */
export class RevisionTooOldError extends RegistryError {
  constructor(message: string, options: RegistryErrorOptions = {}) {
    super(ErrorCode.REVISION_TOO_OLD, message, options);
  }
}

/** The backend is unreachable or timed out. Leases may still be valid. */
export class UnavailableError extends RegistryError {
  constructor(message: string, options: RegistryErrorOptions = {}) {
    super(ErrorCode.UNAVAILABLE, message, options);
  }
}

/** Credentials refused (UNAUTHENTICATED) or a permission missing (PERMISSION_DENIED). */
export class PermissionError extends RegistryError {
  constructor(code: 'PERMISSION_DENIED' | 'UNAUTHENTICATED', message: string, options: RegistryErrorOptions = {}) {
    super(code, message, options);
  }
}

/** A record that cannot be decoded, e.g. edited by hand into garbage. */
export class CorruptRecordError extends RegistryError {
  readonly key: string;
  constructor(key: string, message: string, options: RegistryErrorOptions = {}) {
    super(ErrorCode.CORRUPT_RECORD, message, options);
    this.key = key;
  }
}

/** The backend holds a layout of another Rollcall version. */
export class SchemaMismatchError extends RegistryError {
  constructor(message: string, options: RegistryErrorOptions = {}) {
    super(ErrorCode.SCHEMA_MISMATCH, message, options);
  }
}

/** `lock()` gave up after its timeout. */
export class LockTimeoutError extends RegistryError {
  constructor(message: string, options: RegistryErrorOptions = {}) {
    super(ErrorCode.LOCK_TIMEOUT, message, options);
  }
}

/** A lock, leadership or member incarnation ended; the reason of a lock's or a member's AbortSignal. */
export class LeaseLostError extends RegistryError {
  /** Why: `released`, `renew-deadline`, `taken`, `deleted`, `connection-lost`, `closed`, or for a member `withdrawn`. */
  readonly reason: string;
  constructor(reason: string, message: string, options: RegistryErrorOptions = {}) {
    super(ErrorCode.LEASE_LOST, message, options);
    this.reason = reason;
  }
}

/** A wait ended through an AbortSignal. */
export class AbortedError extends RegistryError {
  constructor(message: string, options: RegistryErrorOptions = {}) {
    super(ErrorCode.ABORTED, message, options);
  }
}

/** The registry or the handle has been closed. */
export class ClosedError extends RegistryError {
  constructor(message: string, options: RegistryErrorOptions = {}) {
    super(ErrorCode.CLOSED, message, options);
  }
}

/** True when `err` is a RegistryError with one of `codes`. */
export function hasCode(err: unknown, ...codes: ErrorCode[]): err is RegistryError {
  return err instanceof RegistryError && codes.includes(err.code);
}
