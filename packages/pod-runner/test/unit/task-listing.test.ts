import { describe, expect, it } from 'vitest';
import { decodeLedger, LEDGER_FORMAT, tombstone, type LedgerEntry } from '../../src/ledger-format.js';
import { listTasks } from '../../src/task-listing.js';
import { at, status, T0 } from './fixtures.js';

const ledger = (entries: Record<string, LedgerEntry>) => decodeLedger(Object.fromEntries([['format', String(LEDGER_FORMAT)], ...Object.entries(entries).map(([id, e]) => [`task.${id}`, JSON.stringify(e)])]), 'pod-runner-rollcall-ledger');
const queued = (taskId: string, change: Partial<Extract<LedgerEntry, { state: 'queued' }>> = {}): LedgerEntry => ({ v: 1, state: 'queued', task: { taskId, taskType: 'report', attempt: 1 }, submittedAt: at(0), specHash: 'h', ...change });

describe('listTasks: the pods and the task ledger, one row per task id and attempt', () => {
  it('lists a queued task (no pod), a running one (pod and its queued entry) and an acknowledged one whose pod is gone, by submit time', () => {
    const running = status({ taskId: 'runs', phase: 'running', podName: 'rollcall-runs-1', submittedAt: at(1000) });
    const done = tombstone(status({ taskId: 'acked', phase: 'succeeded', reason: 'Completed', podName: 'rollcall-acked-1', submittedAt: at(0), finishedAt: at(500) }), 'h', T0 + 600);
    const rows = listTasks('rollcall', [running], ledger({ waits: queued('waits', { submittedAt: at(2000) }), runs: queued('runs', { submittedAt: at(1000) }), acked: done }), T0);
    expect(rows.map((r) => [r.taskId, r.attempt, r.phase, r.source, r.ledger])).toEqual([
      ['acked', 1, 'succeeded', 'ledger', 'done'],
      ['runs', 1, 'running', 'pod+ledger', 'queued'],
      ['waits', 1, 'queued', 'ledger', 'queued'],
    ]);
    expect(rows[2]).toMatchObject({ podName: 'rollcall-waits-1', taskType: 'report', submittedAt: at(2000) });
    expect(rows[0]).toMatchObject({ reason: 'Completed', podName: 'rollcall-acked-1', finishedAt: at(500) });
  });

  it('takes the end the runner stored over what the pod shows, and keeps the pod\'s name', () => {
    const pod = status({ taskId: 't1', phase: 'running' });
    const ended = status({ taskId: 't1', phase: 'failed', reason: 'Error', exitCode: 3, finishedAt: at(900) });
    const [row] = listTasks('rollcall', [pod], ledger({ t1: { v: 1, state: 'finished', status: ended } }), T0);
    expect(row).toMatchObject({ phase: 'failed', reason: 'Error', exitCode: 3, source: 'pod+ledger', ledger: 'finished', podName: 'rollcall-t1-1' });
  });

  it('a retried task: the ended attempt from its pod, the next one queued from the ledger, in its backoff until retryAt', () => {
    const first = status({ taskId: 't1', phase: 'failed', reason: 'Evicted' });
    const next = queued('t1', { task: { taskId: 't1', taskType: 'report', attempt: 2 }, retryAt: T0 + 5000, previousAttempts: [{ attempt: 1, podName: 'rollcall-t1-1', phase: 'lost', reason: 'Evicted' }] });
    const rows = listTasks('rollcall', [first], ledger({ t1: next }), T0);
    expect(rows.map((r) => [r.attempt, r.phase, r.source, r.reason])).toEqual([
      [1, 'failed', 'pod', 'Evicted'],
      [2, 'queued', 'ledger', 'RetryBackoff'],
    ]);
    expect(rows[1]!.podName).toBe('rollcall-t1-2');
    expect(listTasks('rollcall', [first], ledger({ t1: next }), T0 + 5000)[1]!.reason).toBeUndefined();
  });

  it('lists a task with only a pod (a runner with no ledger entry for it) from its pod', () => {
    expect(listTasks('rollcall', [status()], new Map(), T0)).toEqual([{ ...status(), source: 'pod' }]);
  });
});
