import { AbortedError, ClosedError, type RegistryError } from './errors.js';
import { Emitter } from './emitter.js';
import type { LeaseHolder, LeaseLossReason } from './lease-holder.js';
import type { Logger } from './logger.js';

export interface LeadershipEvents {
  /** This candidate became leader; `fencingToken` is larger than every earlier term's. */
  elected: { election: string; identity: string; fencingToken: number };
  /** This candidate stopped being leader; it acted as leader no longer than its renew deadline allowed. */
  lost: { election: string; identity: string; fencingToken: number; reason: LeaseLossReason };
  /** The backend refused this candidate for good (PERMISSION_DENIED, UNAUTHENTICATED): the campaign has ended. */
  error: { election: string; identity: string; error: RegistryError };
}

/**
 * A candidacy returned by `campaign()`. It campaigns until `resign()`, and again
 * after every loss; `isLeader` is true only while this process may act as leader.
 */
export class Leadership extends Emitter<LeadershipEvents> {
  /** @internal */
  constructor(
    /** The election's name. */
    readonly election: string,
    /** The identity this candidate writes as holderIdentity. */
    readonly identity: string,
    private readonly holder: LeaseHolder,
    logger: Logger,
    private readonly onResign: () => void,
  ) {
    super(logger);
    holder.on('acquired', ({ fencingToken }) => this.emit('elected', { election, identity, fencingToken }));
    holder.on('lost', ({ fencingToken, reason }) => this.emit('lost', { election, identity, fencingToken, reason }));
    holder.on('failed', ({ error }) => {
      this.failure = error;
      this.emit('error', { election, identity, error });
    });
  }

  private failure: RegistryError | undefined;

  /** Why the campaign ended, when the backend refused it. */
  get error(): RegistryError | undefined {
    return this.failure;
  }

  /** Whether this candidate is the leader now. */
  get isLeader(): boolean {
    return this.holder.isHolding;
  }

  /** The current term's fencing token while leader; undefined otherwise. */
  get fencingToken(): number | undefined {
    return this.holder.fencingToken; // one clock read: two could disagree across a pause
  }

  /** Resolves with the fencing token once leader (at once if already); rejects with ABORTED or CLOSED. */
  whenElected(signal?: AbortSignal): Promise<number> {
    // One read: a pause between two reads (isLeader, then the token) would resolve with undefined.
    const fencingToken = this.fencingToken;
    if (fencingToken !== undefined) return Promise.resolve(fencingToken);
    if (this.failure) return Promise.reject(this.failure);
    if (this.holder.stopped) return Promise.reject(new ClosedError(`campaign for ${this.election} has ended`));
    return new Promise((resolve, reject) => {
      const offElected = this.once('elected', ({ fencingToken }) => {
        signal?.removeEventListener('abort', onAbort);
        offError();
        resolve(fencingToken);
      });
      const offError = this.once('error', ({ error }) => {
        signal?.removeEventListener('abort', onAbort);
        offElected();
        reject(error);
      });
      const onAbort = () => {
        offElected();
        offError();
        reject(new AbortedError(`waiting to lead ${this.election} was aborted`, { cause: signal!.reason }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Stops campaigning. A leader first emits `lost` (reason `released`), then frees the record so a follower takes over at once. */
  async resign(): Promise<void> {
    this.onResign();
    await this.holder.stop('released');
  }
}
