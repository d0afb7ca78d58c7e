import type { RecordKey, RecordKind } from '@rollcall/core/spi';
import { CLUSTER_LABEL, KIND_LABEL, LABEL_VALUE, ROLE_LABEL } from './codec.js';

const KINDS: readonly string[] = ['member', 'heartbeat', 'election', 'lock', 'failover'] satisfies RecordKind[];
/** Kinds whose keys go on to `<role>/<id>` (a failover's to `<role>/<id>/<incarnation>`). */
const ROLE_KINDS: readonly string[] = ['member', 'heartbeat', 'failover'] satisfies RecordKind[];

/** The kind a key or prefix starts with (`lock/…`), and the role when it goes on to `member/<role>/` or `heartbeat/<role>/`. */
function kindAndRole(text: string): { kind?: string; role?: string } {
  const parts = text.split('/');
  const kind = parts[0]!;
  if (parts.length < 2 || !KINDS.includes(kind)) return {};
  // Every key under `member/<role>/` has that role; under `member/<ro` it could be any.
  return ROLE_KINDS.includes(kind) && parts.length >= 3 && parts[1] ? { kind, role: parts[1] } : { kind };
}

function labelsOf(cluster: string, kind: string, role: string | undefined): Record<string, string> {
  const labels: Record<string, string> = { [CLUSTER_LABEL]: cluster, [KIND_LABEL]: kind };
  if (role && LABEL_VALUE.test(role)) labels[ROLE_LABEL] = role;
  return labels;
}

/**
 * The labels of a record's object: the cluster, the record's kind (a member's
 * heartbeat record has its own, `heartbeat`, so a watch of a role's members
 * never receives a heartbeat), and a member's or heartbeat's role when it can be a label value (at most 63 characters of
 * `[A-Za-z0-9-_.]`); a role that cannot goes without, and is found by its kind.
 */
export function recordLabels(cluster: string, key: RecordKey): Record<string, string> {
  const { kind, role } = kindAndRole(key);
  return labelsOf(cluster, kind ?? 'unknown', role);
}

/**
 * The narrowest label selector of every object whose key starts with
 * `prefix`: `member/<role>/…` and `heartbeat/<role>/…` by kind and role, any other `member/…`,
 * `election/…` or `lock/…` by kind, `''` by the cluster alone. It selects a
 * superset: the caller still keeps only the keys under `prefix` (`election/e1`
 * is selected with every election, as `election/e10` is under it too; a role
 * without a role label with its kind).
 */
export function prefixSelector(cluster: string, prefix: string): string {
  const { kind, role } = kindAndRole(prefix);
  const labels = kind ? labelsOf(cluster, kind, role) : { [CLUSTER_LABEL]: cluster };
  return Object.entries(labels)
    .map(([label, value]) => `${label}=${value}`)
    .join(',');
}
