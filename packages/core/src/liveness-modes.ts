import { HeartbeatLiveness } from './heartbeat-liveness.js';
import { HeartbeatReader } from './heartbeat-reader.js';
import type { LivenessContext, LivenessFactory, LivenessStrategy } from './liveness-strategy.js';
import type { MemberLiveness } from './member-liveness.js';
import { MemberReaper } from './member-reaper.js';
import { PodLiveness } from './pod-liveness.js';

/** Each `registry.member.liveness` mode's strategy. A new mode is a new entry here, not a branch in the registry. @internal */
const MODES: Record<MemberLiveness, LivenessFactory> = {
  heartbeat: () => new HeartbeatLiveness(),
  // A registry that may not write judges heartbeats as a reaper would, and reaps nothing.
  reaper: (context) => (context.readOnly ? new HeartbeatReader(context) : new MemberReaper(context)),
  pod: (context) => new PodLiveness(context),
};

/** The strategy of `context.member.liveness`, made once when the registry opens. @internal */
export function openLiveness(context: LivenessContext): LivenessStrategy {
  return MODES[context.member.liveness](context);
}
