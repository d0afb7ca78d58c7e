import { constants } from 'node:os';
import { systemClock, type Clock, type Timer } from './clock.js';
import { InvalidArgumentError } from './errors.js';
import { silentLogger, type Logger } from './logger.js';

/** What `shutdownOnSignals` closes: a `Registry`, or anything with its `close()`. */
export interface Closable {
  close(): Promise<unknown>;
}

/** Options of {@link shutdownOnSignals}. */
export interface ShutdownOptions {
  /**
   * Most time, in milliseconds, from the signal to the exit: `beforeClose` and
   * `close()` together. Default 10_000 — well inside the 30 s a pod is given
   * by default (`terminationGracePeriodSeconds`) before its SIGKILL, so the
   * records are withdrawn and released by the process, not by their leases.
   */
  deadlineMs?: number;
  /** The signals that shut down. Default `['SIGTERM', 'SIGINT']`. */
  signals?: readonly NodeJS.Signals[];
  /**
   * Runs first, once a signal arrived, before `close()`: stop taking work,
   * close a server, flush. Counted in `deadlineMs`; if it throws, the close
   * still happens.
   */
  beforeClose?: (signal: NodeJS.Signals) => unknown;
  /**
   * Whether to end the process when done. Default `true`, with exit code
   * 128 + the signal's number (143 for SIGTERM, 130 for SIGINT), the shell's
   * convention, also when the close failed or ran past the deadline (the
   * logger says so). With `false` nothing exits: the process ends when its
   * event loop is empty.
   */
  exit?: boolean;
  /** Told when the close fails or runs past the deadline, and at a second signal. Default: silent. */
  logger?: Logger;
  /** What `deadlineMs` is counted on. Default the system clock. */
  clock?: Clock;
  /** @internal The process to wire, for tests of the wiring alone. Default `process`. */
  process?: SignalTarget;
}

/** @internal The part of `process` this uses. */
export interface SignalTarget {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): never | void;
}

/** How a shutdown ended. */
export interface ShutdownResult {
  signal: NodeJS.Signals;
  /** 128 + the signal's number: what the process exits with (unless `exit: false`). */
  exitCode: number;
  /** `closed`: everything was withdrawn and released; `failed`: `close()` rejected; `deadline`: it was still running at `deadlineMs`. */
  outcome: 'closed' | 'failed' | 'deadline';
}

/** The signal handlers `shutdownOnSignals` installed. */
export interface ShutdownHandle {
  /** Resolves when a shutdown has finished (just before the exit); pending until a signal arrives. */
  readonly done: Promise<ShutdownResult>;
  /** Removes the handlers, e.g. after the registry was closed some other way; a shutdown under way goes on. */
  dispose(): void;
}

/** Default of {@link ShutdownOptions.deadlineMs}. */
export const DEFAULT_SHUTDOWN_DEADLINE_MS = 10_000;

/**
 * Makes SIGTERM and SIGINT a graceful shutdown: the first one closes
 * `registry` (its members are withdrawn, its leaderships resigned, its locks
 * released, so the others see the process leave at once through their watch,
 * not a lease later) within `deadlineMs`, then exits with 128 + the signal's
 * number. A second signal during the close exits at once. Call it once, right
 * after `createRegistry`; a Kubernetes rolling update then is a handover,
 * not a crash.
 *
 * Throws INVALID_ARGUMENT, installing nothing, for a deadline that is not a
 * positive integer or a signal list that is empty or names an unknown signal.
 */
export function shutdownOnSignals(registry: Closable, options: ShutdownOptions = {}): ShutdownHandle {
  const { deadlineMs = DEFAULT_SHUTDOWN_DEADLINE_MS, signals = ['SIGTERM', 'SIGINT'], beforeClose, exit = true, logger = silentLogger, clock = systemClock } = options;
  const target: SignalTarget = options.process ?? process;
  if (typeof registry?.close !== 'function') throw new InvalidArgumentError('shutdownOnSignals: the first argument must have close() (a Registry)');
  if (!Number.isSafeInteger(deadlineMs) || deadlineMs <= 0) throw new InvalidArgumentError(`shutdownOnSignals: deadlineMs must be a positive integer of milliseconds, got ${String(deadlineMs)}`);
  if (!Array.isArray(signals) || signals.length === 0) throw new InvalidArgumentError('shutdownOnSignals: signals must name at least one signal');
  for (const s of signals) {
    if (typeof s !== 'string' || !(s in constants.signals)) throw new InvalidArgumentError(`shutdownOnSignals: unknown signal ${String(s)}`);
  }

  let started = false;
  let resolveDone!: (result: ShutdownResult) => void;
  const done = new Promise<ShutdownResult>((resolve) => (resolveDone = resolve));
  const exitCode = (signal: NodeJS.Signals) => 128 + constants.signals[signal];

  const onSignal = (signal: NodeJS.Signals) => {
    if (started) {
      // The operator asked twice (a second Ctrl-C): do not make them wait out the deadline.
      logger.warn({ signal }, `[rollcall] second ${signal} during shutdown: exiting without waiting for close()`);
      if (exit) target.exit(exitCode(signal));
      return;
    }
    started = true;
    void shutdown(signal);
  };

  const shutdown = async (signal: NodeJS.Signals) => {
    let timer: Timer | undefined;
    const deadline = new Promise<'deadline'>((resolve) => {
      timer = clock.setTimeout(() => resolve('deadline'), deadlineMs);
    });
    const closing = (async (): Promise<'closed' | 'failed'> => {
      try {
        await beforeClose?.(signal);
      } catch (err) {
        logger.warn({ err, signal }, '[rollcall] beforeClose failed during shutdown; closing the registry anyway');
      }
      try {
        await registry.close();
        return 'closed';
      } catch (err) {
        logger.error({ err, signal }, '[rollcall] close() failed during shutdown');
        return 'failed';
      }
    })();
    const outcome = await Promise.race([closing, deadline]);
    timer?.cancel();
    if (outcome === 'deadline') logger.error({ signal, deadlineMs }, `[rollcall] close() did not finish within ${deadlineMs} ms of ${signal}; exiting anyway (what it had not withdrawn or released ends with its lease)`);
    const result: ShutdownResult = { signal, exitCode: exitCode(signal), outcome };
    resolveDone(result);
    await done; // what the caller chained on `done` runs before the exit
    if (exit) target.exit(result.exitCode);
  };

  for (const s of signals) target.on(s, onSignal);
  return {
    done,
    dispose: () => {
      for (const s of signals) target.off(s, onSignal);
    },
  };
}
