import type { RegistryConfigInput } from '@rollcall/core';

/** What a candidate process is started with (JSON in the SOAK_CANDIDATE environment variable). */
export interface CandidateSpec {
  /** The candidate's name: its holderIdentity in the election and its member id. */
  name: string;
  /** Which start of this candidate this process is: 1, then one more after each SIGKILL and restart. */
  incarnation: number;
  /** The registry configuration, object form, backend section included. */
  registry: RegistryConfigInput;
  /** The election every candidate campaigns in. */
  election: string;
  /** The lock every candidate contends for. */
  lock: string;
  /** The role every candidate announces itself under and watches. */
  role: string;
  /** The fenced resource, `http://127.0.0.1:<port>`. */
  resourceUrl: string;
  /** A leader or lock holder writes to the resource at most this often, milliseconds. */
  writeIntervalMs: number;
  /** How often the candidate samples its state (and writes); a longer gap between two samples is reported as a stall. Milliseconds. */
  tickMs: number;
  /** A gap between samples longer than this is a stall (the process did not run), milliseconds. */
  stallThresholdMs: number;
  /** The member payload is updated this often, milliseconds. */
  updateIntervalMs: number;
  /** A lock is held this long (uniformly at random in the range) before it is released, milliseconds. */
  lockHoldMs: [number, number];
  /** More members the candidate announces under `role` and heartbeats, without updates (the rolling restart's 20 members). Default none. */
  extraMembers?: string[];
  /** Serve the registry's readiness probe (`/readyz`) on this port once announced: a candidate in a pod, in pod liveness. Default none. */
  probePort?: number;
  /**
   * Before opening the registry, listen on 127.0.0.1:`port` and pipe each
   * connection to the unix socket `socketPath`: in a pod, which reaches no address
   * of the host, the way to the coordinator's TCP proxy in front of the API server
   * (its kubeconfig points here), so the soak can cut it. Default none.
   */
  relay?: { port: number; socketPath: string };
  /**
   * Run `registry.failover(role)` under the election (a candidate of this
   * release; one of the release before incarnations ignores it): each handler
   * start and acknowledgement is reported, and the handler resolves at once.
   * Default off.
   */
  failover?: boolean;
}

/** What a candidate that connects back over a socket (CHANNEL_VARIABLE) is told first. */
export interface CandidateInit {
  /** Which start of this candidate this process is; overrides the spec's. */
  incarnation: number;
}

/** Which of the two fenced resources: the election's or the lock's. */
export type Fenced = 'election' | 'lock';

/** A member as a candidate's view holds it. */
export interface ViewedMember {
  id: string;
  payload: unknown;
}

/**
 * What a candidate reports, one JSON line on stdout each (a pipe is written
 * synchronously on Linux, so nothing reported is lost to a SIGKILL). `t` is
 * CLOCK_MONOTONIC milliseconds; `n` numbers the lines of one process.
 */
export type CandidateEvent = { t: number; n: number } & (
  | { type: 'ready' }
  /** The registry's connection state changed. */
  | { type: 'connection'; state: string }
  /**
   * `t` is taken when the announcement arrived, before `valid` was read: whether
   * the process still read itself as holding that token then (`isLeader` and
   * `fencingToken`; the lock handle's `held`). False is an invalid announcement:
   * a pause between the core's last validity read and the listener made it
   * stale, so it opens no term and is counted on its own.
   */
  | { type: 'elected'; token: number; valid: boolean }
  | { type: 'lost'; token: number; reason: string }
  | { type: 'lockAcquired'; token: number; valid: boolean }
  | { type: 'lockLost'; token: number; reason: string }
  /** A sample of `fencingToken` (election) or `held` (lock) that differs from the previous sample. */
  | { type: 'belief'; of: Fenced; token: number | undefined }
  /** The process did not run between `from` and `t` (a SIGSTOP, or the scheduler). */
  | { type: 'stall'; from: number }
  /** `incarnation`: the member's, as this release reports it (a candidate of the release before incarnations reports none). */
  | { type: 'memberAdded'; id: string; payload: unknown; incarnation?: string }
  | { type: 'memberUpdated'; id: string; payload: unknown; incarnation?: string }
  | { type: 'memberRemoved'; id: string; payload: unknown; reason: string; incarnation?: string }
  /** A failover handler started for a dead member incarnation (with {@link CandidateSpec.failover}); `token` is the leader's fencing token. */
  | { type: 'failoverStarted'; id: string; incarnation: string; reason: string; lastPayload: unknown; resumed: boolean; token: number }
  /** Its handler resolved and the acknowledgement landed. */
  | { type: 'failoverAcknowledged'; id: string; incarnation: string; token: number }
  /** The view `members()` returned, taken right after event number `after`. */
  | { type: 'members'; checkpoint: number; after: number; members: ViewedMember[] }
  /** A write to the fenced resource; `t` is when the token was read, `outcome` what the resource said. */
  | { type: 'write'; of: Fenced; token: number; outcome: 'accepted' | 'rejected' | 'failed' }
  /**
   * An update raced a withdraw (then the member was announced again): `written`
   * when update() resolved, else the code it rejected with (CLOSED when the
   * withdraw overtook it: its payload was never written). `from`: when the
   * update was called, CLOCK_MONOTONIC ms (absent from an older release's candidate).
   */
  | { type: 'raced'; payload: unknown; outcome: 'written' | string; from?: number }
  /** The candidate stopped campaigning and contending for the lock, and gave up what it held (a rolling restart's step). */
  | { type: 'handedOff' }
  /** Updates stopped; `payload` is the last one written. */
  | { type: 'quiesced'; payload: unknown }
  /** Something the candidate caught and carried on after (a failed update, a refused lock). */
  | { type: 'error'; where: string; code: string | undefined; message: string }
  /** The candidate could not go on; it exits non-zero after this. */
  | { type: 'fatal'; message: string }
);

/** What the coordinator asks of a candidate, one JSON line on stdin each. */
export type CandidateCommand =
  /** Resign the election (if leading, a `lost` follows), then campaign again. */
  | { op: 'resign' }
  /** Update the payload, withdraw at once or 0–30 ms later (racing the update), then announce again; a `raced` event follows. */
  | { op: 'rejoin' }
  /** Resign for good, stop contending for the lock and release it, keep heartbeating; a `handedOff` event follows. */
  | { op: 'handoff' }
  /** Report the member view (a `members` event). */
  | { op: 'checkpoint'; checkpoint: number }
  /** Stop updating the member payload and report the last one. */
  | { op: 'quiesce' }
  /** Close the registry and exit 0. */
  | { op: 'shutdown' };

/** The environment variable that carries a candidate's {@link CandidateSpec}. */
export const SPEC_VARIABLE = 'SOAK_CANDIDATE';

/**
 * The environment variable that names the unix socket a candidate reports on and
 * takes commands from, instead of stdout and stdin (a candidate in a pod, which its
 * coordinator did not spawn); the first message on it is a {@link CandidateInit}.
 */
export const CHANNEL_VARIABLE = 'SOAK_CHANNEL';
