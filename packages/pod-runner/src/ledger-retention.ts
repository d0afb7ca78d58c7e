/** Keep a tombstone this long after its status was acknowledged. Milliseconds: 24 h. */
export const DEFAULT_RETAIN_DONE_MS = 86_400_000;
/** Keep at most this many tombstones; the oldest go first. */
export const DEFAULT_MAX_DONE = 1000;

/**
 * The tombstones to remove: those acknowledged more than `retainMs` before
 * `now`, then the oldest beyond `maxDone`, then the oldest while `needBytes`
 * more bytes are wanted (a submit that would not fit otherwise). Pure.
 */
export function expiredTombstones(done: { taskId: string; ackedAt: number; bytes: number }[], now: number, retainMs: number, maxDone: number, needBytes = 0): string[] {
  const oldestFirst = [...done].sort((a, b) => a.ackedAt - b.ackedAt);
  const removed: string[] = [];
  let freed = 0;
  for (const [i, t] of oldestFirst.entries()) {
    const kept = oldestFirst.length - i;
    if (t.ackedAt + retainMs > now && kept <= maxDone && freed >= needBytes) break;
    removed.push(t.taskId);
    freed += t.bytes;
  }
  return removed;
}
