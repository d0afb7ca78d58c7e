import { Emitter } from './emitter.js';
import { sameHolder, type HolderInfo } from './lease-info.js';
import { LeaseTracker, type LeaseTrackerOptions } from './lease-tracker.js';

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
        if (!sameHolder(lease?.holder, previous?.holder)) this.emit('changed', { election, leader: lease?.holder, previous: previous?.holder });
      },
    });
    const claim = options.cache.claim(options.key);
    const off = options.cache.watchKey(options.key, () => this.tracker.evaluate());
    this.unsubscribe = () => {
      off();
      claim.release();
    };
    this.offLive = options.cache.onLive(() => this.tracker.evaluate());
    this.tracker.evaluate();
  }

  /** The current leader, or undefined when there is none. */
  get leader(): LeaderInfo | undefined {
    return this.tracker.lease?.holder;
  }

  /** Stops observing. */
  close(): void {
    this.unsubscribe();
    this.offLive();
    this.tracker.close();
  }
}
