import { formatMicroTime, type JsonValue, type LeaseRecord } from './lease-record.js';
import type { RecordKey, StoredRecord } from './store.js';

/**
 * Why a member incarnation is failed over: `withdrawn` (a graceful withdraw
 * the leader saw as one: its record marked withdrawn, then deleted; run only
 * with `includeWithdrawn`), `expired` (no heartbeat within its lease),
 * `deleted` (its record was deleted and the leader did not see it marked
 * withdrawn: anyone's delete, a member of a release before the withdraw mark
 * withdrawing, or a withdraw whose mark the leader's watch folded into the
 * delete), `replaced` (a later incarnation of the same id took its place),
 * `corrupt` (its record became unreadable), `unseen` (it went while no leader
 * watched: a successor found it gone, reason unknown).
 */
export type FailoverReason = 'withdrawn' | 'expired' | 'deleted' | 'replaced' | 'corrupt' | 'unseen';

/**
 * The durable state of one member incarnation's failover, the payload of
 * `failover/<role>/<id>/<incarnation>`. `seen`: a leader saw it alive;
 * `claimed`: the leader of term `token` runs its handler; `acked`: a handler
 * resolved under `token` (never run again); `skipped`: a graceful withdraw
 * not handled (never run).
 * @internal
 */
export type FailoverState =
  | { state: 'seen'; lastPayload?: JsonValue; leaseMs: number }
  | { state: 'claimed'; token: number; reason: FailoverReason; lastPayload?: JsonValue; claims: number }
  | { state: 'acked'; token: number; reason: FailoverReason; claims: number }
  | { state: 'skipped'; token: number; reason: FailoverReason };

/** @internal */
export const FAILOVER_PREFIX = 'failover/';

/** The prefix of every failover record of `role`. @internal */
export function failoverPrefix(role: string): string {
  return `${FAILOVER_PREFIX}${role}/`;
}

/** The record of one incarnation: `failover/<role>/<id>/<incarnation>`. @internal */
export function failoverKey(role: string, id: string, incarnation: string): RecordKey {
  return `${failoverPrefix(role)}${id}/${incarnation}`;
}

/** The id and incarnation a key of `role` names; undefined for any other key. @internal */
export function parseFailoverKey(role: string, key: RecordKey): { id: string; incarnation: string } | undefined {
  const prefix = failoverPrefix(role);
  if (!key.startsWith(prefix)) return undefined;
  const [id, incarnation, ...rest] = key.slice(prefix.length).split('/');
  return id && incarnation && rest.length === 0 ? { id, incarnation } : undefined;
}

const STATES = new Set(['seen', 'claimed', 'acked', 'skipped']);

/** The state a stored failover record holds; `corrupt` when its payload is not one. @internal */
export function failoverStateOf(stored: StoredRecord): FailoverState | 'corrupt' {
  const payload = stored.record.payload as { state?: unknown; token?: unknown; leaseMs?: unknown } | undefined;
  if (typeof payload !== 'object' || payload === null || !STATES.has(payload.state as string)) return 'corrupt';
  if (payload.state === 'seen') return typeof payload.leaseMs === 'number' && payload.leaseMs >= 0 ? (payload as FailoverState) : 'corrupt';
  return Number.isInteger(payload.token) ? (payload as FailoverState) : 'corrupt';
}

/** The record that holds `state`, written by `leader` in term `token` (its fencing token, as `leaseTransitions`). @internal */
export function failoverRecord(state: FailoverState, leader: string, token: number, now: Date): LeaseRecord {
  const time = formatMicroTime(now);
  // Judged by no lease: the seen member's lease is kept for readers, the rest say one second (Kubernetes refuses zero).
  const leaseDurationSeconds = state.state === 'seen' ? Math.max(1, Math.min(3600, Math.ceil(state.leaseMs / 1000))) : 1;
  return { holderIdentity: leader, leaseDurationSeconds, acquireTime: time, renewTime: time, leaseTransitions: token, payload: stripUndefined(state) };
}

function stripUndefined(state: FailoverState): JsonValue {
  return JSON.parse(JSON.stringify(state)) as JsonValue;
}
