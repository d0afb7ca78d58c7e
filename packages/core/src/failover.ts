import type { BackoffOptions } from './backoff.js';
import type { Clock } from './clock.js';
import { Emitter } from './emitter.js';
import { InvalidArgumentError } from './errors.js';
import type { FailoverEvents, FailoverHandler } from './failover-handler.js';
import { FailoverTerm, type FailoverStore, type FailoverView } from './failover-term.js';
import type { Logger } from './logger.js';
import { assertName } from './names.js';
import type { WatchCache } from './watch-cache.js';

export type { FailoverReason } from './failover-record.js';
export type { DeadIncarnation, FailoverEvents, FailoverHandler, FailoverRun } from './failover-handler.js';

/** What `registry.failover()` takes. */
export interface FailoverOptions {
  /**
   * Also fail over graceful withdraws the leader saw as such (reason
   * `withdrawn`: the member marked its record withdrawn before deleting it).
   * Default false: they are recorded `skipped`. Any other delete (reason
   * `deleted`: one the leader did not see marked, such as a withdraw of a
   * member of an earlier release, or one whose mark its watch folded into the
   * delete) is failed over either way: it may be a crash.
   */
  includeWithdrawn?: boolean;
  /**
   * How long a done record (`acked`, `skipped`) is kept after the leading
   * process first saw it done, by that process's clock. Milliseconds, ≥ 0.
   * Default 86400000 (24 h). A handover starts the count again.
   */
  retentionMs?: number;
  /** At most this many done records of the role are kept; beyond it the oldest seen done go first. ≥ 1. Default 10000. */
  maxRetained?: number;
  /** Delays between runs of a rejected handler. Default: 1000 ms doubling to 60000 ms, jitter 0.2. */
  retryBackoff?: Omit<BackoffOptions, 'clock'>;
}

/** @internal */
export type ResolvedFailoverOptions = Required<Omit<FailoverOptions, 'retryBackoff'>> & Pick<FailoverOptions, 'retryBackoff'>;

/** What a failover needs of its registry. @internal */
export interface FailoverContext {
  store: FailoverStore;
  cache: WatchCache;
  clock: Clock;
  logger: Logger;
  view(role: string): FailoverView;
}

/** The leadership a failover follows: a `Leadership`, or anything with its events and token. */
export interface FailoverLeadership {
  readonly identity: string;
  /** Read as the last step before every write: undefined (or another term's) refuses it. */
  readonly fencingToken: number | undefined;
  on(type: 'elected', listener: (event: { fencingToken: number }) => void): () => void;
  on(type: 'lost', listener: (event: { fencingToken: number }) => void): () => void;
}

/**
 * A running failover of one role under one election, from
 * `registry.failover()`: each term of the leadership is a {@link FailoverTerm},
 * created on `elected` and closed on `lost`, so handlers run only while this
 * process leads.
 */
export class Failover extends Emitter<FailoverEvents> {
  private term: FailoverTerm | undefined;
  private readonly offs: (() => void)[];
  private closed = false;
  /** The `pending` last emitted. */
  private published = 0;

  /** @internal */
  constructor(
    readonly role: string,
    private readonly leadership: FailoverLeadership,
    private readonly handler: FailoverHandler,
    private readonly options: ResolvedFailoverOptions,
    private readonly context: FailoverContext,
  ) {
    super(context.logger);
    this.offs = [leadership.on('elected', ({ fencingToken }) => this.begin(fencingToken)), leadership.on('lost', () => this.end())];
    const token = leadership.fencingToken;
    if (token !== undefined) this.begin(token);
  }

  /** Incarnations this term claimed and has not acknowledged yet (running or waiting to retry); 0 while not leading. */
  get pending(): number {
    return this.term?.pending ?? 0;
  }

  /** Whether a term is running: this process leads and the failover is open. */
  get active(): boolean {
    return this.term !== undefined;
  }

  /** Stops: a running handler's signal aborts and it is not acknowledged; its incarnation is resumed by the next leader. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.offs.forEach((off) => off());
    this.end();
  }

  private begin(token: number): void {
    if (this.closed) return;
    this.end();
    const { store, cache, clock, logger } = this.context;
    this.term = new FailoverTerm({
      role: this.role,
      token,
      leader: this.leadership.identity,
      leadership: this.leadership,
      handler: this.handler,
      ...this.options,
      store,
      cache,
      clock,
      logger,
      view: this.context.view(this.role),
      emit: (type, event) => this.emit(type, event as never),
      deposed: () => this.end(),
      pendingChanged: () => this.publishPending(),
    });
  }

  private end(): void {
    this.term?.close();
    this.term = undefined;
    this.publishPending();
  }

  private publishPending(): void {
    const pending = this.pending;
    if (pending === this.published) return;
    this.published = pending;
    this.emit('pending', { role: this.role, pending });
  }
}

/** Checks `registry.failover()`'s arguments and starts it. @internal */
export function openFailover(context: FailoverContext, role: string, leadership: FailoverLeadership, handler: FailoverHandler, options: FailoverOptions): Failover {
  assertName('role', role);
  if (typeof leadership !== 'object' || leadership === null || typeof leadership.on !== 'function') throw new InvalidArgumentError('failover() needs the Leadership of a campaign()');
  return new Failover(role, leadership, handler, failoverOptions(handler, options), context);
}

function failoverOptions(handler: unknown, options: FailoverOptions): ResolvedFailoverOptions {
  if (typeof handler !== 'function') throw new InvalidArgumentError('failover() needs a handler function');
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('failover() options must be an object');
  const retentionMs = options.retentionMs ?? 86_400_000;
  const maxRetained = options.maxRetained ?? 10_000;
  if (!(Number.isFinite(retentionMs) && retentionMs >= 0)) throw new InvalidArgumentError(`failover retentionMs must be a finite number ≥ 0, got ${retentionMs}`);
  if (!(Number.isInteger(maxRetained) && maxRetained >= 1)) throw new InvalidArgumentError(`failover maxRetained must be an integer ≥ 1, got ${maxRetained}`);
  return { includeWithdrawn: options.includeWithdrawn ?? false, retentionMs, maxRetained, retryBackoff: options.retryBackoff };
}
