import { createHash } from 'node:crypto';
import type { RecordKey } from '@rollcall/core/spi';

const MAX_NAME = 63;
const SAFE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 10);
}

/**
 * The object name of a record: a DNS-1123 label of at most 63 characters.
 * `<cluster>-election-scheduler` when the key maps onto one as it is; otherwise a
 * readable prefix and a hash of the whole key, so long or mixed-case keys are
 * hashed, never cut, and two keys never share a name. Member and heartbeat keys
 * always carry the hash, as `<role>/<id>` could otherwise collide (`a-b/c` and `a/b-c`).
 */
export function objectName(cluster: string, key: RecordKey): string {
  const slash = key.indexOf('/');
  const kind = key.slice(0, slash);
  const rest = key.slice(slash + 1);
  const plain = `${cluster}-${kind}-${rest}`;
  if (kind !== 'member' && kind !== 'heartbeat' && SAFE.test(rest) && plain.length <= MAX_NAME) return plain;
  const suffix = `-${hash(`${cluster}\u0000${key}`)}`;
  const readable = plain.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-');
  return `${readable.slice(0, MAX_NAME - suffix.length).replace(/-+$/, '')}${suffix}`;
}
