import type { RecordKey } from './store.js';

/** What a record is for; also a label on Kubernetes objects. */
export type RecordKind = 'member' | 'election' | 'lock';

/** @internal */
export const MEMBER_PREFIX = 'member/';
/** @internal */
export const ELECTION_PREFIX = 'election/';
/** @internal */
export const LOCK_PREFIX = 'lock/';

export function memberKey(role: string, id: string): RecordKey {
  return `${MEMBER_PREFIX}${role}/${id}`;
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
  if (kind === 'member') {
    const [role, id, ...rest] = name.split('/');
    if (!role || !id || rest.length) return undefined;
    return { kind, name, role, id };
  }
  if ((kind === 'election' || kind === 'lock') && name && !name.includes('/')) return { kind, name };
  return undefined;
}
