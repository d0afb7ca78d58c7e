/** What {@link holdRequests} hands back. */
export interface HeldRequests<R> {
  /** Resolves with the first request that matched, once it is held. */
  held: Promise<R>;
  /** Sends the held request on, as it was; its answer goes to its caller. Requests after it were never held. */
  release(): void;
  /** Puts the client's own `request` back (a request still held is released first). */
  restore(): void;
}

/**
 * Holds the first request of `client` that `match` accepts until
 * {@link HeldRequests.release}: a write decided by one term, stuck in flight
 * while another term begins. It sits inside the API client's request path —
 * the client's `request` is wrapped on this instance — so the caller's own
 * checks (the pod runner's leader gate, before `request`) have already passed.
 * Every other request goes through unchanged. For tests.
 */
export function holdRequests<R>(client: { request<T>(req: R): Promise<T> }, match: (req: R) => boolean): HeldRequests<R> {
  const original = client.request.bind(client) as <T>(req: R) => Promise<T>;
  let taken = false;
  let onHeld!: (req: R) => void;
  let onRelease!: () => void;
  const held = new Promise<R>((resolve) => (onHeld = resolve));
  const released = new Promise<void>((resolve) => (onRelease = resolve));
  client.request = async <T>(req: R): Promise<T> => {
    if (!taken && match(req)) {
      taken = true;
      onHeld(req);
      await released;
    }
    return original<T>(req);
  };
  return {
    held,
    release: () => onRelease(),
    restore: () => {
      onRelease();
      client.request = original;
    },
  };
}
