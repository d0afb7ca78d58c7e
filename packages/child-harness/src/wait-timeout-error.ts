/** Thrown when a bounded wait runs out. */
export class WaitTimeoutError extends Error {
  constructor(what: string, timeoutMs: number, cause?: unknown) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}`, cause === undefined ? undefined : { cause });
    this.name = 'WaitTimeoutError';
  }
}
