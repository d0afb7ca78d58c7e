import { InvalidArgumentError } from './errors.js';

/**
 * Name rules, the same on every backend so a name valid on one is valid on all.
 * Long names are fine: backends with short limits (Kubernetes: 63) hash them.
 */

/** Roles, elections and locks: 1–128 of `A-Z a-z 0-9 . _ -`, starting and ending alphanumeric. */
const NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$/;
/** Member ids and holder identities: 1–253 of `A-Z a-z 0-9 . _ - : @`, no slash. */
const IDENTITY = /^[A-Za-z0-9](?:[A-Za-z0-9._:@-]{0,251}[A-Za-z0-9])?$/;
/** Clusters: a DNS-1123 label, as it becomes a Kubernetes label value and a path segment. */
const CLUSTER = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export const NAME_RULE = '1-128 characters of A-Z a-z 0-9 . _ -, starting and ending with a letter or digit';
export const IDENTITY_RULE = '1-253 characters of A-Z a-z 0-9 . _ - : @, starting and ending with a letter or digit';
export const CLUSTER_RULE = 'a DNS-1123 label: 1-63 characters of a-z 0-9 -, starting and ending with a letter or digit';

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value) : String(value);
}

/** Throws INVALID_ARGUMENT unless `value` is a valid role, election or lock name. */
export function assertName(what: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || !NAME.test(value)) {
    throw new InvalidArgumentError(`${what} ${describe(value)} is not valid: ${NAME_RULE}`);
  }
}

/** Whether `value` is a valid member id or holder identity. */
export function isValidIdentity(value: string): boolean {
  return IDENTITY.test(value);
}

/** Throws INVALID_ARGUMENT unless `value` is a valid member id or holder identity. */
export function assertIdentity(what: string, value: unknown): asserts value is string {
  if (typeof value !== 'string' || !isValidIdentity(value)) {
    throw new InvalidArgumentError(`${what} ${describe(value)} is not valid: ${IDENTITY_RULE}`);
  }
}

/** @internal */
export function isValidCluster(value: string): boolean {
  return CLUSTER.test(value);
}
