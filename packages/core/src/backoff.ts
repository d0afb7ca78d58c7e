import { systemClock, type Clock, type Timer } from './clock.js';
import { InvalidArgumentError } from './errors.js';

/** What a {@link Backoff} takes. Every field has a default. */
export interface BackoffOptions {
  /** Where delays are waited ({@link Backoff.schedule}). Default the system clock. */
  clock?: Clock;
  /** The delay after the first failure. Milliseconds, ≥ 0. Default 500. */
  initialMs?: number;
  /** Each further failure multiplies the delay by this. ≥ 1. Default 2. */
  factor?: number;
  /** No delay is longer. Milliseconds, ≥ `initialMs`. Default 30000, or `initialMs` when that is longer. */
  maxMs?: number;
  /**
   * The fraction of each delay taken off at random, so that processes that
   * failed together do not retry together: a delay `d` becomes
   * `d · (1 − jitter · r)`, `r` from `random`. Never longer than without
   * jitter, so `maxMs` stays a bound. 0 to 1; 0 is no jitter. Default 0.2.
   */
  jitter?: number;
  /** Uniform in [0, 1). Default `Math.random`; a test injects its own to make delays exact. */
  random?: () => number;
}

/**
 * Exponential backoff with jitter and a cap, for retrying a connection, a
 * watch or a call: `initialMs`, then times `factor` per failure up to `maxMs`,
 * each delay shortened by up to `jitter` of itself. {@link reset} after a
 * success starts again from `initialMs`. One per thing retried; not shared.
 */
export class Backoff {
  private readonly clock: Clock;
  private readonly initialMs: number;
  private readonly factor: number;
  private readonly maxMs: number;
  private readonly jitter: number;
  private readonly random: () => number;
  /** The un-jittered delay the next failure waits. */
  private baseMs: number;
  private count = 0;

  constructor(options: BackoffOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.initialMs = options.initialMs ?? 500;
    this.factor = options.factor ?? 2;
    this.maxMs = options.maxMs ?? Math.max(30_000, this.initialMs);
    this.jitter = options.jitter ?? 0.2;
    this.random = options.random ?? Math.random;
    if (!(this.initialMs >= 0) || !Number.isFinite(this.initialMs)) throw new InvalidArgumentError(`backoff initialMs must be a finite number ≥ 0, got ${this.initialMs}`);
    if (!(this.factor >= 1) || !Number.isFinite(this.factor)) throw new InvalidArgumentError(`backoff factor must be a finite number ≥ 1, got ${this.factor}`);
    if (!(this.maxMs >= this.initialMs)) throw new InvalidArgumentError(`backoff maxMs must be ≥ initialMs (${this.initialMs}), got ${this.maxMs}`);
    if (!(this.jitter >= 0 && this.jitter <= 1)) throw new InvalidArgumentError(`backoff jitter must be between 0 and 1, got ${this.jitter}`);
    this.baseMs = this.initialMs;
  }

  /** Failures counted since construction or the last {@link reset}. */
  get failures(): number {
    return this.count;
  }

  /** Counts a failure and returns how long to wait before the next try. Milliseconds. */
  next(): number {
    const base = this.baseMs;
    this.count += 1;
    this.baseMs = Math.min(this.baseMs * this.factor, this.maxMs);
    return base * (1 - this.jitter * this.random());
  }

  /** Counts a failure and calls `fn` after {@link next}'s delay on the clock. */
  schedule(fn: () => void): Timer {
    return this.clock.setTimeout(fn, this.next());
  }

  /** A success: the next failure waits `initialMs` again. */
  reset(): void {
    this.baseMs = this.initialMs;
    this.count = 0;
  }
}
