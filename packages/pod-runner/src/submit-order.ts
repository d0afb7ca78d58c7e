import type { LedgerEntry, QueuedEntry } from './ledger-format.js';

let lastSeq = 0;

/**
 * The next submit sequence number of this process: it orders the entries of
 * one millisecond (`submittedAt` has no finer grain), where many submits land
 * under load. Increasing for the life of the process; a restarted process
 * starts again at 1, in a later millisecond.
 */
export function nextSubmitSeq(): number {
  lastSeq += 1;
  return lastSeq;
}

/** When a queued entry joined the queue, wall-clock ms: its retry's end of backoff, else its submit. */
const joinedAt = (entry: QueuedEntry) => entry.retryAt ?? Date.parse(entry.submittedAt);

/**
 * A ledger's entries in the order a restore takes them: ended ones first (as
 * read), then queued ones in the order they joined the queue — by submit (or a
 * retry's end of backoff), then sequence (an entry written before `seq` existed
 * comes first within its millisecond), then id — the order the runner that
 * stored them kept. The ConfigMap's data comes back sorted by key, which is
 * not that order.
 */
export function restoreOrder(entries: Map<string, LedgerEntry>): [string, LedgerEntry][] {
  const ended: [string, LedgerEntry][] = [];
  const queued: [string, QueuedEntry][] = [];
  for (const [taskId, entry] of entries) {
    if (entry.state === 'queued') queued.push([taskId, entry]);
    else ended.push([taskId, entry]);
  }
  queued.sort(([aId, a], [bId, b]) => joinedAt(a) - joinedAt(b) || (a.seq ?? 0) - (b.seq ?? 0) || (aId < bId ? -1 : aId > bId ? 1 : 0));
  return [...ended, ...queued];
}
