import { LeaseLostError, type Leadership, type Registry } from '@rollcall/core';
import { BACKEND } from './errors.js';

/** What the gate tells its runner. */
export interface LeaderGateHandlers {
  /** This runner now leads, with the term's fencing token. */
  elected(fencingToken: number): void;
  /** This runner no longer leads: it must stop acting at once. */
  lost(reason: string): void;
  /** A write was held back: this runner's term may be over. */
  fenced?(verb: string): void;
}

/**
 * Who may act on pods. Without a registry the runner acts alone and always
 * leads; with one it leads while it holds the election (`pod-runner-<name>`),
 * and the term's fencing token goes onto the pods it creates.
 *
 * Leading is judged at the moment of asking, not from the last event: the
 * elector's own renew-deadline check (a process stopped past its lease has
 * not heard its `lost` yet when it resumes, and its watch's news may be
 * handled before its timers), and no pod may carry a newer term's token than
 * this runner's. {@link fence} is that check before each write.
 */
export class LeaderGate {
  private leadership: Leadership | undefined;
  private token: number | undefined;
  /** The newest term seen on a pod (its fencing-token annotation). */
  private newestSeen = 0;
  private handlers: LeaderGateHandlers | undefined;
  private closed = false;

  constructor(
    private readonly registry: Registry | undefined,
    private readonly election: string,
    private readonly identity: string | undefined,
  ) {}

  /** Campaigns, with a registry; without one there is nothing to win. */
  start(handlers: LeaderGateHandlers): void {
    this.handlers = handlers;
    if (!this.registry) return;
    const leadership = this.registry.campaign(this.election, this.identity);
    this.leadership = leadership;
    leadership.on('elected', ({ fencingToken }) => {
      if (this.closed) return;
      this.token = fencingToken;
      handlers.elected(fencingToken);
    });
    leadership.on('lost', ({ reason }) => {
      this.token = undefined;
      handlers.lost(reason);
    });
  }

  get isLeader(): boolean {
    return this.whyNot() === undefined;
  }

  /** The current term's token; undefined without a registry or while not leading. */
  get fencingToken(): number | undefined {
    return this.isLeader ? this.token : undefined;
  }

  /** A pod's fencing token, seen through the watch: a newer term than this runner's means it leads no more. */
  see(token: string | undefined): void {
    const seen = Number(token);
    if (Number.isSafeInteger(seen) && seen > this.newestSeen) this.newestSeen = seen;
  }

  /**
   * Before each write: throws LEASE_LOST (and tells `fenced`) unless this
   * runner leads now, so a runner whose term may be over sends nothing.
   */
  fence(verb: string): void {
    const why = this.whyNot();
    if (why === undefined) return;
    this.handlers?.fenced?.(verb);
    throw new LeaseLostError(why.reason, `not sending ${verb}: ${why.message}`, { backend: BACKEND });
  }

  private whyNot(): { reason: string; message: string } | undefined {
    if (!this.registry) return undefined;
    if (this.token === undefined) return { reason: 'released', message: `this runner does not lead ${this.election}` };
    // the elector's renew deadline, on its own monotonic clock: past it, another may lead already
    if (!this.leadership?.isLeader || this.leadership.fencingToken !== this.token) return { reason: 'renew-deadline', message: `this runner's term ${this.token} of ${this.election} is past its renew deadline` };
    if (this.newestSeen > this.token) return { reason: 'taken', message: `a pod carries term ${this.newestSeen} of ${this.election}, newer than this runner's ${this.token}` };
    return undefined;
  }

  /** Stops campaigning (a leader resigns); an election won after this is ignored. */
  async close(): Promise<void> {
    this.closed = true;
    await this.leadership?.resign();
  }
}
