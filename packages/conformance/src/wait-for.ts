/**
 * Bounded waits. The suite never sleeps to let something happen: it waits for
 * the event or the condition, and fails with a description when the bound
 * passes. `observeFor` is the one deliberate pause, for asserting that
 * something does *not* happen within a window.
 */

import { WaitTimeoutError } from '@rollcall/child-harness';

/**
 * Thrown by a predicate to end a wait at once with this error, even a wait
 * that retries errors (the server being waited for exited: no point waiting on).
 */
export class StopWaiting extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StopWaiting';
  }
}

/** How a {@link waitFor} waits, beyond its bound. */
export interface WaitForOptions {
  /** What is awaited, for the timeout's message; a function is asked at that moment, so it can say what it saw. Default `a condition`. */
  what?: string | (() => string);
  /** How often the predicate is re-checked, milliseconds. Default 10. */
  intervalMs?: number;
  /**
   * Whether a predicate that throws is asked again (a server not listening
   * yet), the last error named in the timeout's message, rather than failing
   * the wait at once. A {@link StopWaiting} always fails it at once. Default false.
   */
  retryErrors?: boolean;
  /** More for the timeout's message, asked at that moment, on lines of its own (a server log's tail). Default nothing. */
  explain?: () => string;
}

/**
 * Resolves once `predicate()` returns a truthy value (which it resolves with),
 * re-checking it every `intervalMs` (10 ms); rejects with WaitTimeoutError
 * after `timeoutMs`, naming what it waited for (the third argument: that
 * description, or {@link WaitForOptions}). The predicate may be async; an
 * exception from it fails the wait at once unless `retryErrors` is set. The
 * one bounded poll of the repository: the suite, the packages' tests, the
 * test environment's servers and the benchmarks all wait with it.
 */
export async function waitFor<T>(predicate: () => T | Promise<T>, timeoutMs: number, options: string | (() => string) | WaitForOptions = 'a condition'): Promise<NonNullable<T>> {
  const { what = 'a condition', intervalMs = 10, retryErrors = false, explain } = typeof options === 'object' ? options : { what: options };
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await predicate();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      if (!retryErrors || err instanceof StopWaiting) throw err;
      lastError = err;
    }
    if (performance.now() >= deadline) {
      const detail = lastError === undefined ? '' : ` (last error: ${(lastError as Error)?.message ?? String(lastError)})`;
      const more = explain ? `\n${explain()}` : '';
      throw new WaitTimeoutError(`${typeof what === 'function' ? what() : what}${detail}${more}`, timeoutMs, lastError);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, Math.max(0, deadline - performance.now()))));
  }
}

/** Anything with an `on(type, listener)` that returns an unsubscribe function, like core's emitters. */
export interface Subscribable<Events> {
  on<K extends keyof Events>(type: K, listener: (event: Events[K]) => void): () => void;
}

/**
 * Resolves with the next `type` event of `emitter` that satisfies `match`;
 * rejects with WaitTimeoutError after `timeoutMs`. Subscribe before causing the
 * event: call this first, then act, then await the promise.
 */
export function nextEvent<Events, K extends keyof Events>(
  emitter: Subscribable<Events>,
  type: K,
  timeoutMs: number,
  match: (event: Events[K]) => boolean = () => true,
): Promise<Events[K]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new WaitTimeoutError(`a ${String(type)} event`, timeoutMs));
    }, timeoutMs);
    const off = emitter.on(type, (event) => {
      if (!match(event)) return;
      clearTimeout(timer);
      off();
      resolve(event);
    });
  });
}

/** Resolves when `signal` aborts (with its reason); rejects after `timeoutMs`. */
export function whenAborted(signal: AbortSignal, timeoutMs: number): Promise<unknown> {
  if (signal.aborted) return Promise.resolve(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new WaitTimeoutError('the AbortSignal', timeoutMs)), timeoutMs);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(signal.reason);
      },
      { once: true },
    );
  });
}

/**
 * Waits out an observation window of `ms` milliseconds. Only for asserting
 * that something does not happen (a member that keeps heartbeating is not
 * expired, a phantom event does not arrive); never to let something happen.
 */
export function observeFor(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A rejection as a test reads it: an Error, with a RegistryError's `code` and `key` when it is one. */
export type Rejection = Error & { code?: string; key?: string };

/** Resolves with the reason `promise` (or the call) rejects with; fails if it succeeds. */
export async function rejection(promise: Promise<unknown> | (() => unknown)): Promise<Rejection> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (err) {
    return err as Rejection;
  }
  throw new Error('expected a rejection, but the call succeeded');
}
