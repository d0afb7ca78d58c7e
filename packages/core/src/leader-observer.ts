import type { Clock, Timer } from './clock.js';
import { Emitter } from './emitter.js';
import { parseTime } from './lease-record.js';
import type { Logger } from './logger.js';
import type { RecordKey } from './store.js';
import type { WatchCache } from './watch-cache.js';

/** The leader of an election as an observer sees it. */
export interface LeaderInfo {
  identity: string;
  fencingToken: number;
  /** When the holder says it acquired (its wall clock). */
  acquireTime: Date | undefined;
  /** When the holder says it last renewed (its wall clock). */
  renewTime: Date | undefined;
}

export interface LeaderObserverEvents {
  /** The leader changed: a new one, none (resigned or expired by this observer's clock), or a new term. */
  changed: { election: string; leader: LeaderInfo | undefined; previous: LeaderInfo | undefined };
}

/**
 * Watches an election without campaigning, from the shared cache: no calls to
 * the backend. A leader whose record stops changing for its lease duration, by
 * this process's clock, is reported gone.
 */
export class LeaderObserver extends Emitter<LeaderObserverEvents> {
  private current: LeaderInfo | undefined;
  private expiryTimer: Timer | undefined;
  private readonly unsubscribe: () => void;

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
    this.evaluate();
  }

  /** The current leader, or undefined when there is none. */
  get leader(): LeaderInfo | undefined {
    return this.current;
  }

  /** Stops observing. */
  close(): void {
    this.unsubscribe();
    this.expiryTimer?.cancel();
  }

  private evaluate(): void {
    this.expiryTimer?.cancel();
    const entry = this.cache.get(this.key);
    const record = entry?.stored?.record;
    let next: LeaderInfo | undefined;
    if (entry && record && record.holderIdentity !== '') {
      const expiresIn = entry.observedAt + record.leaseDurationSeconds * 1000 - this.clock.now();
      if (expiresIn > 0) {
        next = { identity: record.holderIdentity, fencingToken: record.leaseTransitions, acquireTime: parseTime(record.acquireTime), renewTime: parseTime(record.renewTime) };
        this.expiryTimer = this.clock.setTimeout(() => this.evaluate(), expiresIn + 1);
      }
    }
    const previous = this.current;
    this.current = next;
    if (previous?.identity !== next?.identity || previous?.fencingToken !== next?.fencingToken) {
      this.emit('changed', { election: this.election, leader: next, previous });
    }
  }
}
