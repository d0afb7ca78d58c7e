import type { WaitForOptions } from '@rollcall/conformance';
import { logTail } from './log-tail.js';

/**
 * How the test environment waits for a server with conformance's `waitFor`
 * (the repository's one bounded poll): a probe that throws (nothing listening
 * yet) is asked again, every 100 ms unless `intervalMs` says otherwise, and a
 * timeout shows the last error and the tail of `logFile`. A probe throws
 * `StopWaiting` to give up at once (the server exited).
 */
export function serverWait(options: { what: string; logFile?: string; intervalMs?: number }): WaitForOptions {
  const { what, logFile, intervalMs = 100 } = options;
  return { what, intervalMs, retryErrors: true, ...(logFile === undefined ? {} : { explain: () => logTailBlock(logFile) }) };
}

/** The tail of `file` between two rules, for an error message. */
export function logTailBlock(file: string): string {
  return `--- last lines of ${file} ---\n${logTail(file)}\n---`;
}
