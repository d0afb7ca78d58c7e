import type { LivenessStrategy, MemberKeeping } from './liveness-strategy.js';
import { heartbeatJudged } from './record-liveness.js';
import type { CacheEntry } from './watch-cache.js';

/**
 * The `heartbeat` mode: every heartbeat rewrites the member record, so every
 * reader of the role receives it and judges expiry itself; of the readers that
 * see a member expire, the one whose compare-and-set mark lands deletes it.
 * A pod-mode member's record (a cluster switching to `pod`) is never expired
 * here: it is present while it exists, and goes with its pod.
 * @internal
 */
export class HeartbeatLiveness implements LivenessStrategy {
  readonly mode = 'heartbeat' as const;

  readersExpire(entry: CacheEntry): boolean {
    return heartbeatJudged(entry);
  }

  keeping(): MemberKeeping {
    return { heartbeatKey: undefined, heartbeats: true, liveness: { mode: 'heartbeat' } };
  }

  reading(): void {}

  close(): void {}
}
