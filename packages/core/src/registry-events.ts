import type { ConnectionEvents } from './connection-monitor.js';
import type { FailoverEvents } from './failover-handler.js';
import type { LeaseLossReason } from './lease-holder.js';
import type { LeadershipEvents } from './leadership.js';
import type { MemberLostEvent, MemberReannouncedEvent } from './member-handle.js';
import type { MemberEvent } from './member.js';
import type { CorruptEntry } from './store.js';

/** Every state change of a registry, for applications and metrics. */
export interface RegistryEvents extends ConnectionEvents {
  elected: LeadershipEvents['elected'];
  leadershipLost: LeadershipEvents['lost'];
  lockAcquired: { name: string; fencingToken: number };
  lockLost: { name: string; fencingToken: number; reason: LeaseLossReason };
  memberAdded: Extract<MemberEvent, { type: 'added' }>;
  memberUpdated: Extract<MemberEvent, { type: 'updated' }>;
  memberRemoved: Extract<MemberEvent, { type: 'removed' }>;
  /** A member this process announced lost its incarnation (its handle's `lost`). */
  memberLost: MemberLostEvent;
  /** A member this process announced was announced again as a new incarnation (its handle's `reannounced`). */
  memberReannounced: MemberReannouncedEvent;
  /** A failover handler of this process started (`resumed`: an earlier term claimed it). */
  failoverStarted: FailoverEvents['started'];
  /** A failover handler of this process resolved and its acknowledgement landed. */
  failoverAcknowledged: FailoverEvents['acknowledged'];
  /** A failover of this process has this many incarnations claimed and not acknowledged (0 when its term ends). */
  failoverPending: FailoverEvents['pending'];
  /** A record that cannot be decoded (edited by hand?); it is ignored until it is fixed or replaced. */
  corruptRecord: { key: string; error: CorruptEntry['error'] };
}

/** How a part of the registry emits the registry's events. @internal */
export type RegistryEmit = <K extends keyof RegistryEvents>(type: K, event: RegistryEvents[K]) => void;
