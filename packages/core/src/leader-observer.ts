import type { Clock, Timer } from './clock.js';
import { Emitter } from './emitter.js';
import { judgeLease, sameHolder, type HolderInfo } from './lease-info.js';
import type { Logger } from './logger.js';
import type { RecordKey } from './store.js';
import type { WatchCache } from './watch-cache.js';

/** The leader of an election: its holder. */
export type LeaderInfo = HolderInfo;

export interface LeaderObserverEvents {
  /** The leader changed: a new one, none (resigned or expired by this observer's clock), or a new term. */
  changed: { election: string; leader: LeaderInfo | undefined; previous: LeaderInfo | undefined };
}

/**
 * Watches an election without campaigning, from the shared cache: no calls to
 * the backend. A leader whose record stops changing for its lease duration, by
 * this process's clock, is reported gone; time this process spent blind (its
 * watch down) does not count against the leader.
 */
export class LeaderObserver extends Emitter<LeaderObserverEvents> {
  private current: LeaderInfo | undefined;
  private expiryTimer: Timer | undefined;
  private readonly unsubscribe: () => void;
  private readonly offLive: () => void;

  /** @internal */
  constructor(
    /** The election's name. */
    readonly election: string,
    private readonly key: RecordKey,
    private readonly cache: WatchCache,
    private readonly clock: Clock,
    logger: Logger,
  ) {
    super(logger);
    this.unsubscribe = cache.watchKey(key, () => this.evaluate());
    this.offLive = cache.onLive(() => this.evaluate());
    this.evaluate();
  }

  /** The current leader, or undefined when there is none. */
  get leader(): LeaderInfo | undefined {
    return this.current;
  }

  /** Stops observing. */
  close(): void {
    this.unsubscribe();
    this.offLive();
    this.expiryTimer?.cancel();
  }

  private evaluate(): void {
    this.expiryTimer?.cancel();
    const entry = this.cache.get(this.key);
    const judged = entry && judgeLease(this.election, entry, this.cache, this.clock.now());
    const next = judged?.lease.holder;
    const expiresInMs = judged?.expiresInMs;
    if (expiresInMs !== undefined) this.expiryTimer = this.clock.setTimeout(() => this.evaluate(), expiresInMs + 1);
    const previous = this.current;
    this.current = next;
    if (!sameHolder(previous, next)) {
      this.emit('changed', { election: this.election, leader: next, previous });
    }
  }
}
