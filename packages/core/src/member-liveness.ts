import type { MemberTiming } from './timing.js';

/**
 * How a member's liveness reaches its peers (`registry.member.liveness`).
 *
 * - `heartbeat` (default): every heartbeat rewrites the member record, so every
 *   process that reads the role receives each one and judges expiry itself;
 *   of those that see a member expire, the one whose compare-and-set mark on
 *   its record lands deletes it.
 * - `reaper`: the member record `member/<role>/<id>` is written only on
 *   announce, payload change and withdraw; heartbeats renew a separate record
 *   `heartbeat/<role>/<id>` that only one elected reaper per role watches. The
 *   reaper deletes an expired member, and readers see its `removed`.
 * - `pod`: a member in a pod is alive while its pod exists and is Ready; its
 *   record is written on announce, payload change and withdraw only, and
 *   readers follow the readiness of each role's pods with one watch (on
 *   Kubernetes, the EndpointSlices of a Service per role). A member outside a
 *   pod keeps heartbeats as in `heartbeat`. Needs a backend that reports pod
 *   readiness; any other refuses it with INVALID_CONFIG.
 *
 * Every member record says which of these applies to it, and every mode
 * judges a record by that: a heartbeat reader never expires a pod member.
 */
export type MemberLiveness = 'heartbeat' | 'reaper' | 'pod';

/** Every value `registry.member.liveness` takes. */
export const MEMBER_LIVENESS_MODES: readonly MemberLiveness[] = ['heartbeat', 'reaper', 'pod'];

/** The `registry.member` section: heartbeat timings and the liveness mode. */
export interface MemberConfig extends MemberTiming {
  /** How liveness reaches peers: `heartbeat`, `reaper` or `pod` (see {@link MemberLiveness}). Default `heartbeat`. */
  liveness: MemberLiveness;
}

