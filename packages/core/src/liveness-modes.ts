import { HeartbeatLiveness } from './heartbeat-liveness.js';
import type { LivenessFactory, MemberLiveness } from './member-liveness.js';
import { PodLiveness } from './pod-liveness.js';
import { ReaperLiveness, ReaperRecords } from './reaper-liveness.js';

/**
 * Each `registry.member.liveness` mode's strategy. A new mode is a new entry
 * here, not a branch in the registry.
 * @internal
 */
export const LIVENESS_MODES: Readonly<Record<MemberLiveness, LivenessFactory>> = {
  heartbeat: (context) => new HeartbeatLiveness(new ReaperRecords(context)),
  reaper: (context) => new ReaperLiveness(context),
  pod: (context) => new PodLiveness(context, new ReaperRecords(context)),
};
