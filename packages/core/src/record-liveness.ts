import type { CacheEntry } from './watch-cache.js';

/** The pod a member record says its member lives in (`liveness: { mode: 'pod' }`); undefined for any other record. @internal */
export function podUidOf(entry: CacheEntry): string | undefined {
  const liveness = entry.stored?.record.liveness;
  return liveness?.mode === 'pod' ? liveness.podUid : undefined;
}

/** Whether readers judge a record's lease in the modes where readers expire members (heartbeat, and pod for members outside a pod): any record but a pod-mode one. @internal */
export function heartbeatJudged(entry: CacheEntry): boolean {
  return podUidOf(entry) === undefined;
}
