import { LeaseLostError } from './errors.js';
import type { LeaseHolder } from './lease-holder.js';

/**
 * A held lock. It renews itself until `release()`; `signal` aborts when the
 * lock is no longer held, for any reason, with a LEASE_LOST error whose
 * `reason` says why (`released`, `renew-deadline`, `taken`, ...). Guard work
 * with the signal and pass `fencingToken` to the resource so it can reject a
 * stale holder.
 */
export class LockHandle {
  private readonly controller = new AbortController();

  /** @internal */
  constructor(
    /** The lock's name. */
    readonly name: string,
    /** This hold's fencing token; larger than every earlier hold's. */
    readonly fencingToken: number,
    private readonly holder: LeaseHolder,
    private readonly onEnd: () => void,
  ) {
    holder.on('lost', ({ reason }) => {
      this.onEnd();
      this.controller.abort(new LeaseLostError(reason, `lock ${name} (fencing token ${fencingToken}) is no longer held: ${reason}`));
    });
  }

  /**
   * Aborts when the lock is no longer held. Reading it past the renew deadline
   * aborts it then, before the deadline timer has run (a process resumed from a
   * pause must not see a live signal).
   */
  get signal(): AbortSignal {
    if (!this.controller.signal.aborted && !this.holder.isHolding) {
      this.controller.abort(new LeaseLostError('renew-deadline', `lock ${this.name} (fencing token ${this.fencingToken}) is no longer held: renew-deadline`));
    }
    return this.controller.signal;
  }

  /** Whether the lock is still held, judged by the clock at the moment of reading (see `signal`). */
  get held(): boolean {
    return this.holder.isHolding;
  }

  /** Releases the lock (idempotent); the next waiter is woken through the watch. */
  async release(): Promise<void> {
    await this.holder.stop('released');
    this.onEnd();
  }
}
