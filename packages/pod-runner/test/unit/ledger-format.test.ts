import { describe, expect, it } from 'vitest';
import { hasCode } from '@rollcall/core';
import { decodeLedger, encodeEntry, ENTRY_PREFIX, LEDGER_FORMAT, tombstone, tombstoneStatus } from '../../src/ledger-format.js';
import type { TaskStatus } from '../../src/task.js';

/** A version-1 ledger as a version-1 runner wrote it, kept verbatim: every later runner must read it. */
const V1_LEDGER: Record<string, string> = {
  format: '1',
  'task.ingest-1':
    '{"v":1,"state":"queued","task":{"taskId":"ingest-1","taskType":"ingest","args":["--day","2026-12-03"],"timeouts":{"unschedulable":300000,"imagePull":300000,"start":600000},"attempt":2},"submittedAt":"2026-12-05T10:00:00.000Z","specHash":"3f9a","previousAttempts":[{"attempt":1,"podName":"rollcall-ingest-1-1","phase":"lost","reason":"Evicted","finishedAt":"2026-12-05T10:01:00.000Z"}],"retryAt":1764928870000}',
  'task.report-7':
    '{"v":1,"state":"finished","status":{"taskId":"report-7","taskType":"report","tags":{},"attempt":1,"phase":"succeeded","podName":"rollcall-report-7-1","template":"default","submittedAt":"2026-12-05T10:00:00.000Z","reason":"Completed","exitCode":0,"result":{"rows":3},"finishedAt":"2026-12-05T10:02:00.000Z"},"specHash":"77c1"}',
  'task.old-3':
    '{"v":1,"state":"done","status":{"taskId":"old-3","taskType":"report","attempt":1,"phase":"failed","reason":"Error","podName":"rollcall-old-3-1","template":"default","submittedAt":"2026-12-04T10:00:00.000Z","finishedAt":"2026-12-04T10:05:00.000Z"},"specHash":"a1b2","ackedAt":1764842700000}',
};

const status: TaskStatus = { taskId: 'report-7', taskType: 'report', tags: { tier: 'batch' }, attempt: 1, phase: 'succeeded', podName: 'rollcall-report-7-1', template: 'default', submittedAt: '2026-12-05T10:00:00.000Z', reason: 'Completed', exitCode: 0, terminationMessage: '{"rows":3}', result: { rows: 3 }, finishedAt: '2026-12-05T10:02:00.000Z' };

describe('the task ledger format', () => {
  it('reads a version-1 ledger: a queued retry in its backoff, a finished status not acknowledged, a tombstone', () => {
    const entries = decodeLedger(V1_LEDGER, 'pod-runner-rollcall-ledger');
    expect([...entries.keys()]).toEqual(['ingest-1', 'report-7', 'old-3']);
    expect(entries.get('ingest-1')).toMatchObject({ state: 'queued', task: { taskId: 'ingest-1', attempt: 2 }, retryAt: 1764928870000, previousAttempts: [{ attempt: 1, reason: 'Evicted' }] });
    expect(entries.get('report-7')).toMatchObject({ state: 'finished', status: { phase: 'succeeded', result: { rows: 3 } } });
    expect(entries.get('old-3')).toMatchObject({ state: 'done', status: { attempt: 1, phase: 'failed' }, ackedAt: 1764842700000 });
  });

  it('refuses a newer runner\'s ledger or entry with SCHEMA_MISMATCH, and garbage with CORRUPT_RECORD naming the key', () => {
    const refused = (data: Record<string, string>) => {
      try {
        decodeLedger(data, 'pod-runner-rollcall-ledger');
      } catch (err) {
        return err;
      }
      throw new Error('read');
    };
    expect(hasCode(refused({ format: String(LEDGER_FORMAT + 1) }), 'SCHEMA_MISMATCH')).toBe(true);
    expect(hasCode(refused({ format: '1', 'task.x': '{"v":2,"state":"shiny"}' }), 'SCHEMA_MISMATCH')).toBe(true);
    expect(refused({ format: '1', 'task.x': 'not json' })).toMatchObject({ code: 'CORRUPT_RECORD', key: 'task.x' });
    expect(refused({ format: '1', 'task.x': '{"v":1,"state":"queued"}' })).toMatchObject({ code: 'CORRUPT_RECORD', key: 'task.x' });
    expect(refused({ format: 'one' })).toMatchObject({ code: 'CORRUPT_RECORD', key: 'format' });
  });

  it('keeps a tombstone small: the fields a resubmit is answered with, not the result', () => {
    const done = tombstone(status, 'f'.repeat(64), 1764928900000);
    expect(tombstoneStatus(done)).toEqual({ taskId: 'report-7', taskType: 'report', tags: {}, attempt: 1, phase: 'succeeded', reason: 'Completed', podName: 'rollcall-report-7-1', template: 'default', submittedAt: '2026-12-05T10:00:00.000Z', finishedAt: '2026-12-05T10:02:00.000Z' });
    // key and value of this typical tombstone (a 64-character spec hash), measured: the README says 375 bytes
    expect(ENTRY_PREFIX.length + status.taskId.length + encodeEntry(done).length).toBe(375);
  });
});
