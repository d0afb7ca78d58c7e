import type { Clock, Timer } from './clock.js';
import { ErrorCode, hasCode } from './errors.js';
import type { Logger } from './logger.js';
import type { StoreSessionState } from './store.js';
import { Emitter } from './emitter.js';

/**
 * `connected`: the backend answers. `suspended`: it does not, but leases taken
 * before may still be valid. `lost`: long enough has passed that every lease
 * this process held has expired for the others.
 */
export type ConnectionState = 'connected' | 'suspended' | 'lost';

export interface ConnectionEvents {
  connected: { state: 'connected' };
  suspended: { state: 'suspended'; cause?: unknown };
  lost: { state: 'lost'; cause?: unknown };
  /** Back after `suspended` or `lost`; `after` says which. */
  reconnected: { state: 'connected'; after: 'suspended' | 'lost' };
}

/** @internal */
export interface ConnectionMonitorOptions {
  clock: Clock;
  logger: Logger;
  backend: string;
  /** Time without a successful call after which the state becomes `lost`. Milliseconds. */
  lostAfterMs: number;
  /** Interval of probes while suspended. Milliseconds. */
  probeIntervalMs: number;
  /** A cheap call whose success proves the backend answers again. */
  probe: () => Promise<unknown>;
}

/**
 * Derives the connection state from the outcome of every store call (and from
 * a backend's own session signal, where it has one). While suspended it probes,
 * so a process that only observes still learns it is back.
 * @internal
 */
export class ConnectionMonitor extends Emitter<ConnectionEvents> {
  private current: ConnectionState = 'connected';
  private lastSuccess: number;
  /** When the state last became `connected`. */
  private connectedSince: number;
  private lostTimer: Timer | undefined;
  private probeTimer: Timer | undefined;
  private closed = false;

  constructor(private readonly options: ConnectionMonitorOptions) {
    super(options.logger);
    this.lastSuccess = this.connectedSince = options.clock.now();
  }

  get state(): ConnectionState {
    return this.current;
  }

  /** A store call succeeded. */
  succeeded(): void {
    this.lastSuccess = this.options.clock.now();
    if (this.current === 'connected') return;
    const after = this.current;
    this.clearTimers();
    this.current = 'connected';
    this.connectedSince = this.lastSuccess;
    this.options.logger.info({ backend: this.options.backend, after }, '[rollcall] reconnected');
    this.emit('reconnected', { state: 'connected', after });
  }

  /**
   * A store call failed; only UNAVAILABLE says anything about the connection,
   * and only for a call started (`startedAt`, clock time) since the connection
   * last came back: a call that waited out the outage and ran out of time just
   * after the reconnect tells nothing about the new connection.
   */
  failed(error: unknown, startedAt?: number): void {
    if (!hasCode(error, ErrorCode.UNAVAILABLE)) return;
    if (startedAt !== undefined && startedAt < this.connectedSince) return;
    this.suspend(error);
  }

  /** A backend's own session state (ZooKeeper). */
  session(state: StoreSessionState, cause?: unknown): void {
    if (state === 'connected') this.succeeded();
    else if (state === 'suspended') this.suspend(cause);
    else this.lose(cause);
  }

  close(): void {
    this.closed = true;
    this.clearTimers();
  }

  private suspend(cause: unknown): void {
    if (this.closed || this.current !== 'connected') return;
    this.current = 'suspended';
    this.options.logger.warn({ backend: this.options.backend, err: cause }, '[rollcall] backend unreachable: suspended');
    this.emit('suspended', { state: 'suspended', cause });
    const untilLost = this.lastSuccess + this.options.lostAfterMs - this.options.clock.now();
    this.lostTimer = this.options.clock.setTimeout(() => this.lose(cause), untilLost);
    this.scheduleProbe();
  }

  private lose(cause: unknown): void {
    if (this.closed || this.current === 'lost') return;
    this.lostTimer?.cancel();
    this.current = 'lost';
    this.options.logger.warn({ backend: this.options.backend }, '[rollcall] connection lost: every lease of this process has expired');
    this.emit('lost', { state: 'lost', cause });
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    this.probeTimer?.cancel();
    this.probeTimer = this.options.clock.setTimeout(() => {
      if (this.closed || this.current === 'connected') return;
      this.options.probe().then(
        () => this.succeeded(),
        () => this.current !== 'connected' && this.scheduleProbe(),
      );
    }, this.options.probeIntervalMs);
  }

  private clearTimers(): void {
    this.lostTimer?.cancel();
    this.probeTimer?.cancel();
    this.lostTimer = this.probeTimer = undefined;
  }
}
