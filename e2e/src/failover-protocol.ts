import type { RegistryConfigInput } from '@rollcall/core';

/** What a failover chaos process is started with (JSON in the CHAOS_PROCESS environment variable). */
export interface ChaosSpec {
  /** Its name: the holderIdentity in the election, and a worker's member id. */
  name: string;
  /** Which start of this name this process is: 1, then one more after each SIGKILL and restart. */
  incarnation: number;
  /** A worker announces itself under `role` and works on its items while its member is alive; a leader campaigns and runs the failover handler. */
  part: 'worker' | 'leader';
  /** The registry configuration, object form, backend section included. */
  registry: RegistryConfigInput;
  /** The election the leaders campaign in. */
  election: string;
  /** The workers' role, which every process watches and the leaders fail over. */
  role: string;
  /** The incarnation-checking resource ({@link JsonServer.url}). */
  resourceUrl: string;
  /** A worker writes progress on its item at most this often, milliseconds. */
  writeIntervalMs: number;
  /** A worker samples its member's `alive` this often; a leader too, for stalls. Milliseconds. */
  tickMs: number;
  /** A gap between two samples longer than this is reported as a stall (the process did not run), milliseconds. */
  stallThresholdMs: number;
}

/**
 * What a chaos process reports, one JSON line on stdout each (a pipe is written
 * synchronously on Linux, so nothing reported is lost to a SIGKILL). `t` is
 * CLOCK_MONOTONIC milliseconds; `n` numbers the lines of one process.
 * Incarnations are member incarnations (`Member.incarnation`), not process starts.
 */
export type ChaosEvent = { t: number; n: number } & (
  | { type: 'ready' }
  | { type: 'connection'; state: string }
  /** The process did not run between `from` and `t` (a SIGSTOP, or the scheduler). */
  | { type: 'stall'; from: number }
  /** Something caught and carried on after. */
  | { type: 'error'; where: string; code: string | undefined; message: string }
  /** The process could not go on; it exits non-zero after this. */
  | { type: 'fatal'; message: string }
  /** Every process watches the workers' role. */
  | { type: 'memberAdded'; id: string; incarnation: string }
  | { type: 'memberRemoved'; id: string; incarnation: string; reason: string }
  /** A worker's first incarnation, created. */
  | { type: 'announced'; incarnation: string }
  /** A worker's member handle's `lost` event. */
  | { type: 'memberLost'; incarnation: string; reason: string }
  /** A worker's member handle's `reannounced` event. */
  | { type: 'reannounced'; incarnation: string; previous: string }
  /**
   * A worker's sample of `alive` (with `incarnation`) that differs from the
   * previous sample; `t` is taken before the read. When it turns false,
   * `lastAlive` is the stamp of the last sample that read it true.
   */
  | { type: 'alive'; incarnation: string | undefined; alive: boolean; lastAlive?: number }
  /** A worker's write of progress on its item; `t` is when it read `alive` (true) and `incarnation`, `outcome` what the resource said. */
  | { type: 'work'; incarnation: string; outcome: 'accepted' | 'rejected' | 'failed' }
  /** A leader's election events; `valid` as in the soak (read after the stamp). */
  | { type: 'elected'; token: number; valid: boolean }
  | { type: 'lost'; token: number; reason: string }
  /** A leader's failover handler began (`t`: its first statement): the failover of `incarnation` began. */
  | { type: 'failoverStarted'; id: string; incarnation: string; token: number; resumed: boolean; attempt: number; reason: string }
  /** The handler fenced the dead incarnation at the resource. */
  | { type: 'fenced'; incarnation: string; token: number; outcome: 'accepted' | 'rejected' | 'failed' }
  /** The handler holds (a `hold` command named this incarnation) until its term ends: the coordinator's cue to kill or stop the leader. */
  | { type: 'held'; incarnation: string; token: number }
  /** The failover's `acknowledged` event: the ack landed. */
  | { type: 'acknowledged'; id: string; incarnation: string; token: number }
  | { type: 'skipped'; id: string; incarnation: string; token: number }
  | { type: 'failoverFailed'; id: string; incarnation: string; token: number; attempt: number; message: string }
);

/** What the coordinator asks of a chaos process, one JSON line on stdin each. */
export type ChaosCommand =
  /** (A leader.) When its handler runs for `incarnation`, fence it, then hold until the term ends. */
  | { op: 'hold'; incarnation: string }
  /** Close the registry and exit 0. */
  | { op: 'shutdown' };

/** The environment variable that carries a chaos process's {@link ChaosSpec}. */
export const CHAOS_SPEC_VARIABLE = 'CHAOS_PROCESS';

/** A worker's progress write: `incarnation` is its member incarnation, `readAt` when it read itself alive. */
export interface WorkRequest {
  writer: string;
  incarnation: string;
  item: string;
  readAt: number;
}

/** A leader's fence of a dead incarnation, under its fencing token. */
export interface FenceRequest {
  id: string;
  incarnation: string;
  token: number;
  leader: string;
  readAt: number;
}
