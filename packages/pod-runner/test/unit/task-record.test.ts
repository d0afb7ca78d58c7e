import { describe, expect, it } from 'vitest';
import { hasCode } from '@rollcall/core';
import { TASK_ID_LABEL, TASK_TYPE_LABEL } from '../../src/pod.js';
import type { AttemptOutcome, Task, TaskStatus } from '../../src/task.js';
import {
  assertSubmitSize,
  CANCEL_REQUESTED_ANNOTATION,
  cancelRequestValue,
  dataBytes,
  decodeRecord,
  encodeRecord,
  FREE_TEXT_MAX_BYTES,
  RECORD_SUBMIT_MAX_BYTES,
  recordName,
  SUBMIT_REQUESTED_ANNOTATION,
  TASK_RECORD_FORMAT,
  TASK_RECORD_LABEL,
  TASK_STATE_LABEL,
  WRITE_TERM_ANNOTATION,
  type RecordObject,
  type TaskRecordBody,
} from '../../src/task-record.js';

/** A version-2 record as this format's first runner writes it, kept verbatim: every later runner must read it. */
const V2_RECORD: RecordObject = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'rollcall-task-report-7-3c1f1e52',
    uid: 'u-1',
    resourceVersion: '42',
    labels: { 'rollcall.dev/task-record': 'rollcall', 'rollcall.dev/task-state': 'finished', 'rollcall.dev/task-id': 'report-7', 'rollcall.dev/task-type': 'report' },
    annotations: { 'rollcall.dev/write-term': '3', 'rollcall.dev/cancel-requested': 'operator' },
  },
  data: {
    format: '2',
    record:
      '{"v":2,"state":"finished","task":{"taskId":"report-7","taskType":"report","attempt":2},"template":"default","specHash":"77c1","retry":{"maxAttempts":3,"backoffMs":1000,"retryOn":{"reasons":["Evicted"]}},"submittedAt":"2026-12-05T10:00:00.000Z","seq":4,"previousAttempts":[{"attempt":1,"podName":"rollcall-report-7-1","phase":"lost","reason":"Evicted"}],"status":{"taskId":"report-7","taskType":"report","tags":{},"attempt":2,"phase":"succeeded","podName":"rollcall-report-7-2","template":"default","submittedAt":"2026-12-05T10:00:00.000Z","result":{"rows":3}}}',
  },
};

const task: Task = { taskId: 'ingest_2026.12.05', taskType: 'ingest', args: ['--day', '2026-12-05'], attempt: 1 };
const queued = (change: Partial<TaskRecordBody> = {}): TaskRecordBody => ({ v: 2, state: 'queued', task, template: 'default', specHash: 'abc', submittedAt: '2026-12-07T16:00:00.000Z', seq: 1, ...change });

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('no error');
}

describe('task record names', () => {
  it('are <runner>-task-<slug>-<hash8>, deterministic, DNS subdomains, distinct for ids that differ only in case or separators', () => {
    expect(recordName('rollcall', 'report-7')).toMatch(/^rollcall-task-report-7-[0-9a-f]{8}$/);
    expect(recordName('rollcall', 'report-7')).toBe(recordName('rollcall', 'report-7'));
    const ids = ['Report_7', 'report_7', 'report.7', 'report-7', 'REPORT-7'];
    const names = ids.map((id) => recordName('rollcall', id));
    expect(new Set(names).size).toBe(ids.length);
    // the runner is hashed too: runner "a-task" with id "x" is not runner "a" with id "task-x"
    expect(recordName('a-task', 'x')).not.toBe(recordName('a', 'task-x'));
    const longest = recordName('r'.repeat(30), `A${'_.'.repeat(30)}Z`);
    for (const name of [...names, longest]) {
      expect(name.length).toBeLessThanOrEqual(253);
      expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
    }
  });
});

describe('the task record codec (format 2)', () => {
  it('reads a cancel request with its grace, and a plain reason (one that only looks like JSON included) as a reason; a rewrite keeps both', () => {
    const withAnnotation = (value: string) => {
      const object = encodeRecord('rollcall', queued());
      object.metadata = { ...object.metadata, name: recordName('rollcall', 'report-7'), uid: 'u', resourceVersion: '5', annotations: { [CANCEL_REQUESTED_ANNOTATION]: value } };
      return decodeRecord(object);
    };
    const graced = withAnnotation(cancelRequestValue('operator asked', 1));
    expect(graced).toMatchObject({ cancelRequested: 'operator asked', cancelGraceSeconds: 1 });
    expect(encodeRecord('rollcall', graced.body, { previous: graced }).metadata.annotations?.[CANCEL_REQUESTED_ANNOTATION]).toBe('{"reason":"operator asked","graceSeconds":1}');
    expect(withAnnotation('not needed')).toMatchObject({ cancelRequested: 'not needed' });
    expect(withAnnotation('not needed').cancelGraceSeconds).toBeUndefined();
    for (const odd of ['{"reason": broken', '{"reason":"x","graceSeconds":-1}', '{"reason":"x","graceSeconds":1.5}']) {
      expect(withAnnotation(odd)).toMatchObject({ cancelRequested: odd });
      expect(withAnnotation(odd).cancelGraceSeconds).toBeUndefined();
    }
  });

  it('reads a version-2 record as written: body, identity, term, requests', () => {
    const record = decodeRecord(V2_RECORD);
    expect(record).toMatchObject({ name: 'rollcall-task-report-7-3c1f1e52', uid: 'u-1', resourceVersion: '42', writeTerm: 3, cancelRequested: 'operator' });
    expect(record.body).toMatchObject({ v: 2, state: 'finished', task: { taskId: 'report-7', attempt: 2 }, seq: 4, previousAttempts: [{ reason: 'Evicted' }], status: { phase: 'succeeded', result: { rows: 3 } } });
    expect(record.kept).toBeUndefined();
  });

  it('writes name, labels, the term, data format and record; a follower\'s submit carries no term', () => {
    const object = encodeRecord('rollcall', queued(), { writeTerm: 7 });
    expect(object.metadata).toEqual({
      name: recordName('rollcall', task.taskId),
      labels: { [TASK_RECORD_LABEL]: 'rollcall', [TASK_STATE_LABEL]: 'queued', [TASK_ID_LABEL]: task.taskId, [TASK_TYPE_LABEL]: 'ingest' },
      annotations: { [WRITE_TERM_ANNOTATION]: '7' },
    });
    expect(object.data!.format).toBe(String(TASK_RECORD_FORMAT));
    expect(JSON.parse(object.data!.record!)).toEqual(queued());
    expect(encodeRecord('rollcall', queued()).metadata.annotations).toBeUndefined();
    expect(decodeRecord({ ...object, metadata: { ...object.metadata, uid: 'u', resourceVersion: '1' } }).body).toEqual(queued());
  });

  it('refuses a newer format or body version with SCHEMA_MISMATCH naming the record', () => {
    for (const object of [
      { ...V2_RECORD, data: { ...V2_RECORD.data, format: '3' } },
      { ...V2_RECORD, data: { ...V2_RECORD.data, record: V2_RECORD.data!.record!.replace('{"v":2', '{"v":3') } },
    ]) {
      const err = thrown(() => decodeRecord(object));
      expect(hasCode(err, 'SCHEMA_MISMATCH')).toBe(true);
      expect((err as Error).message).toContain('rollcall-task-report-7-3c1f1e52');
    }
  });

  it('refuses garbage with CORRUPT_RECORD naming the record', () => {
    const cases: RecordObject['data'][] = [
      {},
      { format: 'two', record: '{}' },
      { format: '1', record: '{}' },
      { format: '2', record: 'not json' },
      { format: '2', record: '{"v":2,"state":"queued"}' },
      { format: '2', record: V2_RECORD.data!.record!.replace(/"status":.*$/, '"x":1}') },
      { format: '2', record: '{"v":2,"state":"done","task":{"taskId":"a","taskType":"b"},"submittedAt":"x","specHash":"h","status":{"phase":"failed"}}' },
    ];
    for (const data of cases) {
      const err = thrown(() => decodeRecord({ ...V2_RECORD, data }));
      expect(hasCode(err, 'CORRUPT_RECORD'), JSON.stringify(data)).toBe(true);
      expect((err as { key?: string }).key).toBe('rollcall-task-report-7-3c1f1e52');
    }
    const badTerm = { ...V2_RECORD, metadata: { ...V2_RECORD.metadata, annotations: { [WRITE_TERM_ANNOTATION]: 'x' } } };
    expect(hasCode(thrown(() => decodeRecord(badTerm)), 'CORRUPT_RECORD')).toBe(true);
  });

  it('keeps what it does not know on a read-modify-write: body fields, labels, annotations, data keys', () => {
    const newer: RecordObject = {
      ...V2_RECORD,
      metadata: { ...V2_RECORD.metadata, labels: { ...V2_RECORD.metadata.labels, team: 'data' }, annotations: { ...V2_RECORD.metadata.annotations, 'example.com/owner': 'ops' } },
      data: { ...V2_RECORD.data, record: V2_RECORD.data!.record!.replace('{"v":2,', '{"v":2,"priority":{"class":"high"},'), 'extra.v2minor': 'x' },
    };
    const read = decodeRecord(newer);
    expect((read.body as unknown as { priority: unknown }).priority).toEqual({ class: 'high' });
    // a writer that rebuilt the body from the fields it knows still keeps the unknown ones
    const { priority: _dropped, ...known } = read.body as unknown as Record<string, unknown>;
    const done = { ...(known as unknown as TaskRecordBody), state: 'done' as const, ackedAt: 1 };
    const written = encodeRecord('rollcall', done, { writeTerm: 4, previous: read });
    expect(JSON.parse(written.data!.record!)).toMatchObject({ state: 'done', ackedAt: 1, priority: { class: 'high' } });
    expect(written.data!['extra.v2minor']).toBe('x');
    expect(written.metadata.labels).toMatchObject({ team: 'data', [TASK_STATE_LABEL]: 'done' });
    expect(written.metadata.annotations).toEqual({ 'example.com/owner': 'ops', [WRITE_TERM_ANNOTATION]: '4', [CANCEL_REQUESTED_ANNOTATION]: 'operator' });
    expect(written.metadata.name).toBe(read.name);
    // the requests go once a write decided them
    const cleared = encodeRecord('rollcall', done, { writeTerm: 4, previous: { ...read, submitRequested: task }, clearRequests: true });
    expect(cleared.metadata.annotations).toEqual({ 'example.com/owner': 'ops', [WRITE_TERM_ANNOTATION]: '4' });
    expect(encodeRecord('rollcall', done, { writeTerm: 4, previous: { ...read, submitRequested: task } }).metadata.annotations![SUBMIT_REQUESTED_ANNOTATION]).toBe(JSON.stringify(task));
  });

  it('refuses a submit over 256 KiB with PAYLOAD_TOO_LARGE, and takes one at the bound', () => {
    const sized = (bytes: number) => {
      const base = dataBytes(encodeRecord('rollcall', queued({ task: { ...task, env: { PAD: '' } } })).data);
      return encodeRecord('rollcall', queued({ task: { ...task, env: { PAD: 'x'.repeat(bytes - base) } } }));
    };
    expect(dataBytes(sized(RECORD_SUBMIT_MAX_BYTES).data)).toBe(RECORD_SUBMIT_MAX_BYTES);
    expect(() => assertSubmitSize(sized(RECORD_SUBMIT_MAX_BYTES))).not.toThrow();
    const err = thrown(() => assertSubmitSize(sized(RECORD_SUBMIT_MAX_BYTES + 1)));
    expect(hasCode(err, 'PAYLOAD_TOO_LARGE')).toBe(true);
    expect((err as Error).message).toContain(task.taskId);
  });

  it('the largest record a task can make fits under 1 MiB', () => {
    // The worst submit: its bulk in tags (copied into the status), escaped 6 bytes per character, at the bound.
    const tagsOf = (n: number) => ({ pad: '\u0001'.repeat(n) });
    const base = dataBytes(encodeRecord('rollcall', queued({ task: { ...task, tags: tagsOf(0) } })).data);
    const n = Math.floor((RECORD_SUBMIT_MAX_BYTES - base) / 6);
    const big: Task = { ...task, tags: tagsOf(n) };
    const submitted = encodeRecord('rollcall', queued({ task: big }));
    expect(() => assertSubmitSize(submitted)).not.toThrow();
    expect(dataBytes(submitted.data)).toBeGreaterThan(RECORD_SUBMIT_MAX_BYTES - 6);
    // Its end at the last of 100 attempts, every free text far past its bound, the termination message at the kubelet's 4096 bytes.
    const text = '\u0001'.repeat(100_000);
    const attempts: AttemptOutcome[] = Array.from({ length: 99 }, (_, i) => ({ attempt: i + 1, podName: `rollcall-${'x'.repeat(50)}-${i + 1}`, phase: 'lost', reason: 'NodeShutdown', message: text, exitCode: 137, finishedAt: '2026-12-07T16:00:00.000Z' }));
    const status: TaskStatus = {
      taskId: task.taskId, taskType: 'ingest', tags: big.tags!, attempt: 100, phase: 'timed-out', podName: `rollcall-${'x'.repeat(50)}-100`, template: 'default',
      reason: 'RunTimeout', message: text, exitCode: 137, terminationMessage: '\u0001'.repeat(4096), result: '\u0001'.repeat(4094), podEvents: Array.from({ length: 5 }, () => text),
      previousAttempts: attempts, pendingCause: 'image-pull', ungatedAt: '2026-12-07T16:00:00.000Z', submittedAt: '2026-12-07T16:00:00.000Z', startedAt: '2026-12-07T16:00:00.000Z', finishedAt: '2026-12-07T16:00:00.000Z',
    };
    const done = encodeRecord('rollcall', queued({ task: { ...big, attempt: 100 }, state: 'done', previousAttempts: attempts, retryAt: 1, status, ackedAt: 1 }), { writeTerm: 2 ** 31 });
    const bytes = dataBytes(done.data);
    expect(bytes).toBeLessThan(1_048_576);
    const stored = decodeRecord({ ...done, metadata: { ...done.metadata, uid: 'u', resourceVersion: '1' } }).body;
    expect(Buffer.byteLength(JSON.stringify(stored.status!.message))).toBeLessThanOrEqual(FREE_TEXT_MAX_BYTES + 2);
    expect(stored.status!.message!.endsWith('…')).toBe(true);
    expect(stored.previousAttempts![98]!.message!.endsWith('…')).toBe(true);
    expect(stored.status!.terminationMessage).toBe(status.terminationMessage);
    console.log(`the largest record: ${bytes} bytes of data (${Math.round(bytes / 1024)} KiB; submit ${dataBytes(submitted.data)} bytes)`);
  });
});
