import type { Claim, WatchCache } from './watch-cache.js';

/**
 * The cache's holds a reader keeps until it closes, one per scope: the first
 * read of a scope claims it, later reads wait on the same claim (a scope read
 * once is usually read again).
 * @internal
 */
export class ScopeClaims {
  private readonly claims = new Map<string, Claim>();

  constructor(private readonly cache: WatchCache) {}

  /** Claims `scope` unless already claimed; resolves once it is listed, rejects if that list failed (the cache keeps trying). */
  ready(scope: string): Promise<void> {
    let claim = this.claims.get(scope);
    if (!claim) this.claims.set(scope, (claim = this.cache.claim(scope)));
    return claim.ready();
  }

  /** Whether `scope` is claimed. */
  has(scope: string): boolean {
    return this.claims.has(scope);
  }

  /** The scopes claimed, in claim order. */
  scopes(): string[] {
    return [...this.claims.keys()];
  }

  release(): void {
    for (const claim of this.claims.values()) claim.release();
    this.claims.clear();
  }
}
