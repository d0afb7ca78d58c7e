import { describe, expect, it } from 'vitest';
import { decodeLedger, ENTRY_PREFIX, FORMAT_KEY, type LedgerEntry, type QueuedEntry } from '../../src/ledger-format.js';
import { nextSubmitSeq, restoreOrder } from '../../src/submit-order.js';

const queued = (taskId: string, submittedAt: string, extra: Partial<QueuedEntry> = {}): QueuedEntry => ({ v: 1, state: 'queued', task: { taskId, taskType: 'report' }, submittedAt, specHash: 'h', ...extra });

describe('restoreOrder', () => {
  it('takes queued tasks in submit order, not in the key order the ConfigMap answers with', () => {
    // submitted z, y, x (one millisecond apart): the API server returns the data sorted by key, x first
    const data: Record<string, string> = { [FORMAT_KEY]: '1' };
    const submits = [queued('z', '2026-12-07T12:00:00.001Z'), queued('y', '2026-12-07T12:00:00.002Z'), queued('x', '2026-12-07T12:00:00.003Z')];
    for (const entry of [...submits].sort((a, b) => a.task.taskId.localeCompare(b.task.taskId))) data[ENTRY_PREFIX + entry.task.taskId] = JSON.stringify(entry);
    const entries = decodeLedger(data, 'pod-runner-r-ledger');
    expect([...entries.keys()]).toEqual(['x', 'y', 'z']);
    expect(restoreOrder(entries).map(([id]) => id)).toEqual(['z', 'y', 'x']);
  });

  it('orders one millisecond by sequence, a retry by the end of its backoff, ended entries first', () => {
    const at = '2026-12-07T12:00:00.000Z';
    const entries = new Map<string, LedgerEntry>([
      ['a', queued('a', at, { seq: 3 })],
      ['b', queued('b', at, { seq: 2 })],
      ['c', queued('c', '2026-12-07T11:00:00.000Z', { seq: 1, retryAt: Date.parse(at) + 5 })], // submitted first, back in the queue after its backoff
      ['d', queued('d', at)], // written before seq existed: first within its millisecond
      ['done', { v: 1, state: 'done', status: { taskId: 'done', taskType: 'report', attempt: 1, phase: 'succeeded', podName: 'p', template: 't', submittedAt: at }, ackedAt: 1 }],
    ]);
    expect(restoreOrder(entries).map(([id]) => id)).toEqual(['done', 'd', 'b', 'a', 'c']);
  });

  it('numbers submits in increasing order', () => {
    const first = nextSubmitSeq();
    expect(nextSubmitSeq()).toBe(first + 1);
  });
});
