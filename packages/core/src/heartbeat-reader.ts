import { confirmByRead } from './expiry.js';
import { HeartbeatPairs, type HeartbeatPair } from './heartbeat-pairs.js';
import { parseTime } from './lease-record.js';
import type { LivenessContext, LivenessStrategy, MemberKeeping } from './liveness-strategy.js';
import { isMarked } from './member-mark.js';
import { heartbeatKey, memberKey, parseKey } from './record-key.js';
import type { CacheEntry } from './watch-cache.js';

/**
 * The `reaper` mode for a registry that writes nothing (`registry.readOnly`):
 * it campaigns for no reaper election and deletes nothing, but judges each
 * role it reads as a reaper would ({@link HeartbeatPairs}): a member whose
 * heartbeat has run out — confirmed by reading the heartbeat record unchanged
 * or gone — is no longer vouched for, so readers see it `removed` (`expired`)
 * before (or without) a reaper's delete; a heartbeat after that brings it back.
 * Its members' `renewTime` is their last heartbeat's.
 * @internal
 */
export class HeartbeatReader implements LivenessStrategy {
  readonly mode = 'reaper' as const;
  private readonly roles = new Map<string, HeartbeatPairs>();
  /** Members judged expired and confirmed, by role and id: the record versions that were confirmed. */
  private readonly expired = new Map<string, Map<string, { member: string; heartbeat: string | undefined }>>();

  constructor(private readonly context: LivenessContext) {}

  readersExpire(): boolean {
    return false;
  }

  keeping(role: string, id: string): MemberKeeping {
    return { heartbeatKey: heartbeatKey(role, id), heartbeats: true, liveness: { mode: 'reaper' } };
  }

  reading(role: string): void {
    if (this.roles.has(role)) return;
    const expired = new Map<string, { member: string; heartbeat: string | undefined }>();
    this.expired.set(role, expired);
    this.roles.set(
      role,
      new HeartbeatPairs(role, this.context, {
        due: (pair) => this.confirm(role, pair),
        changed: (id, pair) => {
          const confirmed = expired.get(id);
          if (!pair || (confirmed && wroteSince(pair, confirmed))) expired.delete(id);
          // Judged again on every change: its renewTime is its heartbeat's.
          this.context.rejudge(memberKey(role, id));
        },
      }),
    );
  }

  vouches(entry: CacheEntry): boolean {
    const key = parseKey(entry.key);
    return !(key?.kind === 'member' && this.expired.get(key.role!)?.has(key.id!));
  }

  async ready(role: string): Promise<void> {
    await this.roles.get(role)?.ready();
  }

  lastHeartbeat(role: string, id: string): Date | undefined {
    const heartbeat = this.roles.get(role)?.get(id)?.heartbeat?.stored?.record;
    return heartbeat ? parseTime(heartbeat.renewTime) : undefined;
  }

  close(): void {
    this.roles.forEach((pairs) => pairs.close());
    this.roles.clear();
    this.expired.clear();
  }

  /** A pair ran out: confirmed by a read of its heartbeat record, its member is no longer vouched for. Not armed again until a record changes. */
  private async confirm(role: string, pair: HeartbeatPair): Promise<boolean> {
    if (!pair.member) return false; // a heartbeat alone: no member to report
    const confirmation = await confirmByRead(this.context.store, heartbeatKey(role, pair.id), pair.heartbeat?.version);
    if (confirmation === 'changed') return true; // the watch brings the heartbeat
    this.expired.get(role)?.set(pair.id, { member: pair.member.version, heartbeat: pair.heartbeat?.version });
    this.context.rejudge(memberKey(role, pair.id));
    return false;
  }
}

/**
 * Whether the member wrote since its expiry was confirmed at `confirmed`'s
 * versions — a heartbeat, or a new announce — which brings it back; a
 * reaper's deletes and its mark do not.
 */
function wroteSince(pair: HeartbeatPair, confirmed: { member: string; heartbeat: string | undefined }): boolean {
  if (pair.heartbeat && pair.heartbeat.version !== confirmed.heartbeat) return true;
  const record = pair.member?.stored?.record;
  return pair.member !== undefined && pair.member.version !== confirmed.member && record !== undefined && !isMarked(record);
}
