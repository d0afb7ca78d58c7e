import { describe, expect, it } from 'vitest';
import { decodeRecord, encodeRecord, type TaskRecord, type TaskRecordBody } from '../../src/task-record.js';
import { listTasks } from '../../src/task-listing.js';
import { at, status, T0 } from './fixtures.js';

/** A record as the informer hands it: encoded as the store writes it, decoded as it reads it. */
function record(body: Partial<TaskRecordBody> & { task: TaskRecordBody['task'] }, annotations: Record<string, string> = {}): TaskRecord {
  const object = encodeRecord('rollcall', { v: 2, state: 'queued', template: 'default', specHash: 'h', submittedAt: at(0), seq: 1, ...body });
  object.metadata.annotations = { ...object.metadata.annotations, ...annotations };
  return decodeRecord({ ...object, metadata: { ...object.metadata, uid: 'u', resourceVersion: '1' } });
}
const task = (taskId: string, attempt = 1) => ({ taskId, taskType: 'report', attempt });

describe('listTasks: the task records and the pods, one row per task id and attempt', () => {
  it('lists a queued task (no pod), a running one (pod and its queued record) and an acknowledged one whose pod is gone, by submit time', () => {
    const running = status({ taskId: 'runs', phase: 'running', podName: 'rollcall-runs-1', submittedAt: at(1000) });
    const done = record({ task: task('acked'), state: 'done', ackedAt: T0 + 600, status: status({ taskId: 'acked', phase: 'succeeded', reason: 'Completed', podName: 'rollcall-acked-1', submittedAt: at(0), finishedAt: at(500) }) });
    const rows = listTasks('rollcall', [running], [record({ task: task('waits'), submittedAt: at(2000) }), record({ task: task('runs'), submittedAt: at(1000) }), done], T0);
    expect(rows.map((r) => [r.taskId, r.attempt, r.phase, r.source, r.record])).toEqual([
      ['acked', 1, 'succeeded', 'record', 'done'],
      ['runs', 1, 'running', 'pod+record', 'queued'],
      ['waits', 1, 'queued', 'record', 'queued'],
    ]);
    expect(rows[2]).toMatchObject({ podName: 'rollcall-waits-1', taskType: 'report', template: 'default', submittedAt: at(2000) });
    expect(rows[0]).toMatchObject({ reason: 'Completed', podName: 'rollcall-acked-1', finishedAt: at(500) });
  });

  it('takes the end the runner stored over what the pod shows, and keeps the pod\'s name', () => {
    const pod = status({ taskId: 't1', phase: 'running' });
    const ended = status({ taskId: 't1', phase: 'failed', reason: 'Error', exitCode: 3, finishedAt: at(900) });
    const [row] = listTasks('rollcall', [pod], [record({ task: task('t1'), state: 'finished', status: ended })], T0);
    expect(row).toMatchObject({ phase: 'failed', reason: 'Error', exitCode: 3, source: 'pod+record', record: 'finished', podName: 'rollcall-t1-1' });
  });

  it('a retried task: the ended attempt from its pod, the next one queued from the record, in its backoff until retryAt', () => {
    const first = status({ taskId: 't1', phase: 'failed', reason: 'Evicted' });
    const next = record({ task: task('t1', 2), retryAt: T0 + 5000, previousAttempts: [{ attempt: 1, podName: 'rollcall-t1-1', phase: 'lost', reason: 'Evicted' }] });
    const rows = listTasks('rollcall', [first], [next], T0);
    expect(rows.map((r) => [r.attempt, r.phase, r.source, r.reason])).toEqual([
      [1, 'failed', 'pod', 'Evicted'],
      [2, 'queued', 'record', 'RetryBackoff'],
    ]);
    expect(rows[1]!.podName).toBe('rollcall-t1-2');
    expect(listTasks('rollcall', [first], [next], T0 + 5000)[1]!.reason).toBeUndefined();
  });

  it('a queued task with a cancel asked and not yet decided shows CancelRequested with the reason', () => {
    const [row] = listTasks('rollcall', [], [record({ task: task('t1') }, { 'rollcall.dev/cancel-requested': 'bad input' })], T0);
    expect(row).toMatchObject({ phase: 'queued', reason: 'CancelRequested', message: 'bad input', source: 'record' });
  });

  it('lists a task with only a pod (a first-generation runner\'s, with no record) from its pod', () => {
    expect(listTasks('rollcall', [status()], [], T0)).toEqual([{ ...status(), source: 'pod' }]);
  });
});
