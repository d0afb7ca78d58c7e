import type { LivenessStrategy, MemberKeeping } from './liveness-strategy.js';

/**
 * The `heartbeat` mode: every heartbeat rewrites the member record, so every
 * reader of the role receives it and judges expiry itself; of the readers that
 * see a member expire, the one whose compare-and-set mark lands deletes it.
 * @internal
 */
export class HeartbeatLiveness implements LivenessStrategy {
  readonly mode = 'heartbeat' as const;
  readonly readersExpire = true;

  keeping(): MemberKeeping {
    return { heartbeatKey: undefined, heartbeats: true };
  }

  reading(): void {}

  close(): void {}
}
