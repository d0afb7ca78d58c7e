import { setTimeout as delay } from 'node:timers/promises';
import { TestenvError } from './errors.js';
import { logTail } from './log-tail.js';

/** Thrown by a condition to stop waiting at once (e.g. the process died). */
export class GiveUpWaiting extends TestenvError {}

export interface WaitForOptions {
  /** What we are waiting for, for the error message ("zookeeper to serve"). */
  what: string;
  timeoutMs: number;
  /** How often to re-check the condition. */
  intervalMs?: number;
  /** A log whose tail goes into the error when the condition is not met in time. */
  logFile?: string;
}

/**
 * Re-checks `condition` until it returns true or the bound runs out. This is the only
 * way the test environment synchronises: never a fixed sleep.
 */
export async function waitFor(condition: () => Promise<boolean> | boolean, options: WaitForOptions): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await condition()) return;
    } catch (error) {
      if (error instanceof GiveUpWaiting) throw error;
      lastError = error;
    }
    if (Date.now() >= deadline) break;
    await delay(options.intervalMs ?? 100);
  }
  const detail = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
  const tail = options.logFile ? `\n--- last lines of ${options.logFile} ---\n${logTail(options.logFile)}\n---` : '';
  throw new TestenvError(`timed out after ${options.timeoutMs} ms waiting for ${options.what}${detail}${tail}`, { cause: lastError });
}
