import { Emitter } from './emitter.js';
import { sameHolder, type HolderInfo } from './lease-info.js';
import { LeaseTracker, type LeaseTrackerOptions } from './lease-tracker.js';
import type { Claim } from './watch-cache.js';

/** The leader of an election: its holder. */
export type LeaderInfo = HolderInfo;

export interface LeaderObserverEvents {
  /** The leader changed: a new one, none (resigned or expired by this observer's clock), or a new term. */
  changed: { election: string; leader: LeaderInfo | undefined; previous: LeaderInfo | undefined };
}

/**
 * Watches an election without campaigning, from the shared cache. A leader
 * whose record stops changing for its lease duration, by this process's clock,
 * is reported gone once a read confirms the record unchanged; time this process
 * spent blind (its watch down) does not count against the leader.
 */
export class LeaderObserver extends Emitter<LeaderObserverEvents> {
  private readonly tracker: LeaseTracker;
  private readonly claim: Claim;
  private readonly unsubscribe: () => void;
  private readonly offLive: () => void;

  /** @internal */
  constructor(
    /** The election's name. */
    readonly election: string,
    options: Omit<LeaseTrackerOptions, 'name' | 'onChange'>,
  ) {
    super(options.logger);
    this.tracker = new LeaseTracker({
      ...options,
      name: election,
      onChange: (lease, previous) => {
        // The leader the first list shows is the state, not a change.
        if (!this.claim.listed) return;
        if (!sameHolder(lease?.holder, previous?.holder)) this.emit('changed', { election, leader: lease?.holder, previous: previous?.holder });
      },
    });
    this.claim = options.cache.claim(options.key);
    const off = options.cache.watchKey(options.key, () => this.tracker.evaluate());
    this.unsubscribe = () => {
      off();
      this.claim.release();
    };
    this.offLive = options.cache.onLive(() => this.tracker.evaluate());
    this.tracker.evaluate();
  }

  /** The current leader, or undefined when there is none (or before the election is first listed: see {@link ready}). */
  get leader(): LeaderInfo | undefined {
    return this.tracker.lease?.holder;
  }

  /**
   * Resolves with the leader once the election is in this process's cache
   * (at once when something else here already reads it; otherwise after one
   * list). Rejects with the error of a list that failed first; the observer
   * keeps trying, and `changed` reports what follows.
   */
  async ready(): Promise<LeaderInfo | undefined> {
    await this.claim.ready();
    return this.leader;
  }

  /** Stops observing. */
  close(): void {
    this.unsubscribe();
    this.offLive();
    this.tracker.close();
  }
}
