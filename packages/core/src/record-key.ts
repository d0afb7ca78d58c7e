import { createHash } from 'node:crypto';
import type { RecordKey } from './store.js';

/**
 * What a record is for; also a label on Kubernetes objects. A `heartbeat` is a
 * member's liveness record in the `reaper` mode; a `failover` is one member
 * incarnation's failover record (`failover/<role>/<id>/<incarnation>`).
 */
export type RecordKind = 'member' | 'heartbeat' | 'election' | 'lock' | 'failover';

/** @internal */
export const MEMBER_PREFIX = 'member/';
/** @internal */
export const HEARTBEAT_PREFIX = 'heartbeat/';
/** @internal */
export const ELECTION_PREFIX = 'election/';
/** @internal */
export const LOCK_PREFIX = 'lock/';

export function memberKey(role: string, id: string): RecordKey {
  return `${MEMBER_PREFIX}${role}/${id}`;
}

/** The liveness record of a member in the `reaper` mode: same role and id, its own kind, so readers of `member/<role>/` never receive it. */
export function heartbeatKey(role: string, id: string): RecordKey {
  return `${HEARTBEAT_PREFIX}${role}/${id}`;
}

/** Election names starting with this are reserved for the reapers of the `reaper` liveness mode. */
export const REAPER_ELECTION_PREFIX = 'rollcall-reaper.';

/** The election whose leader reaps `role`'s members: a valid election name (at most 128 characters; a long role is hashed). */
export function reaperElection(role: string): string {
  const plain = `${REAPER_ELECTION_PREFIX}${role}`;
  if (plain.length <= 128) return plain;
  return `${REAPER_ELECTION_PREFIX}${role.slice(0, 100)}.${createHash('sha256').update(role).digest('hex').slice(0, 10)}`;
}

export function electionKey(name: string): RecordKey {
  return `${ELECTION_PREFIX}${name}`;
}

export function lockKey(name: string): RecordKey {
  return `${LOCK_PREFIX}${name}`;
}

/** Splits a key into its kind and the rest; undefined for a key Rollcall did not write. */
export function parseKey(key: RecordKey): { kind: RecordKind; name: string; role?: string; id?: string } | undefined {
  const slash = key.indexOf('/');
  if (slash < 0) return undefined;
  const kind = key.slice(0, slash);
  const name = key.slice(slash + 1);
  if (kind === 'member' || kind === 'heartbeat') {
    const [role, id, ...rest] = name.split('/');
    if (!role || !id || rest.length) return undefined;
    return { kind, name, role, id };
  }
  if (kind === 'failover') {
    const [role, id, incarnation, ...rest] = name.split('/');
    if (!role || !id || !incarnation || rest.length) return undefined;
    return { kind, name, role, id };
  }
  if ((kind === 'election' || kind === 'lock') && name && !name.includes('/')) return { kind, name };
  return undefined;
}
