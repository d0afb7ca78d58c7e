import type { Leadership, Registry } from '@rollcall/core';

/** What the gate tells its runner. */
export interface LeaderGateHandlers {
  /** This runner now leads, with the term's fencing token. */
  elected(fencingToken: number): void;
  /** This runner no longer leads: it must stop acting at once. */
  lost(reason: string): void;
}

/**
 * Who may act on pods. Without a registry the runner acts alone and always
 * leads; with one it leads while it holds the election (`pod-runner-<name>`),
 * and the term's fencing token goes onto the pods it creates.
 */
export class LeaderGate {
  private leadership: Leadership | undefined;
  private token: number | undefined;
  private closed = false;

  constructor(
    private readonly registry: Registry | undefined,
    private readonly election: string,
    private readonly identity: string | undefined,
  ) {}

  /** Campaigns, with a registry; without one there is nothing to win. */
  start(handlers: LeaderGateHandlers): void {
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
    return !this.registry || this.token !== undefined;
  }

  /** The current term's token; undefined without a registry or while not leading. */
  get fencingToken(): number | undefined {
    return this.token;
  }

  /** Stops campaigning (a leader resigns); an election won after this is ignored. */
  async close(): Promise<void> {
    this.closed = true;
    await this.leadership?.resign();
  }
}
