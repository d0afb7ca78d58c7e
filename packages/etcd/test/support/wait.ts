/** Resolves once `predicate()` is truthy, re-checking every 10 ms; rejects naming `what` after `timeoutMs`. */
export async function waitFor<T>(predicate: () => T | Promise<T>, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value as NonNullable<T>;
    if (performance.now() >= deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The rejection of `promise` (fails if it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error & { code?: string; key?: string }> {
  try {
    await promise;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a rejection, but the promise resolved');
}
