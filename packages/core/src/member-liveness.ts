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
 *   reaper deletes an expired member, and readers see its `removed`. Every
 *   process of a cluster must use the same mode.
 */
export type MemberLiveness = 'heartbeat' | 'reaper';

/** Every value `registry.member.liveness` takes. */
export const MEMBER_LIVENESS_MODES: readonly MemberLiveness[] = ['heartbeat', 'reaper'];

/** The `registry.member` section: heartbeat timings and the liveness mode. */
export interface MemberConfig extends MemberTiming {
  /** How liveness reaches peers: `heartbeat` or `reaper` (see {@link MemberLiveness}). Default `heartbeat`. */
  liveness: MemberLiveness;
}

