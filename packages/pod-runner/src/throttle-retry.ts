import { type Clock, hasCode } from '@rollcall/core';
import { Backoff } from '@rollcall/core/spi';

/** Tries of a request the API server refused with 429 before its refusal is the caller's: 5 (waits of about 0.2, 0.4, 0.8 and 1.6 s between them). */
export const THROTTLE_TRIES = 5;
const FIRST_WAIT_MS = 200;
const LONGEST_WAIT_MS = 2000;

/** Whether `err` is the API server's 429: its flow control refused the request before processing it, so sending it again is safe. */
export function isThrottled(err: unknown): boolean {
  const status = (err as { cause?: { code?: unknown; reason?: unknown } }).cause;
  return hasCode(err, 'UNAVAILABLE') && (status?.code === 429 || status?.reason === 'TooManyRequests');
}

/**
 * Sends `request` again, after a growing pause on `clock`, while the API
 * server answers 429 (a burst of submits meets its priority and fairness
 * limits); the last refusal, or any other answer, is the caller's. As
 * client-go's REST client does for its callers.
 */
export async function retryThrottled<T>(clock: Clock, request: () => Promise<T>, tries = THROTTLE_TRIES): Promise<T> {
  const backoff = new Backoff({ clock, initialMs: FIRST_WAIT_MS, maxMs: LONGEST_WAIT_MS });
  for (let tried = 1; ; tried++) {
    try {
      return await request();
    } catch (err) {
      if (!isThrottled(err) || tried >= tries) throw err;
      const waitMs = backoff.next();
      await new Promise<void>((resolve) => clock.setTimeout(resolve, waitMs));
    }
  }
}
