import { describe, expect, it } from 'vitest';
import { type AckedEnd, crashVerdict, redeliveries } from '../crash-verdict.js';

const end = (taskId: string, attempt: number, extra: Partial<AckedEnd> = {}): AckedEnd => ({
  taskId, attempt, phase: 'succeeded', exitCode: 0, podName: `r-${taskId}-${attempt}`, finishedAt: '2026-12-07T23:00:00.000Z', ...extra,
});

// a clean run: a task, a retried one (attempt 1 ended into attempt 2), a resubmitted one (two attempts asked)
const clean = {
  asked: [{ taskId: 'ok', attempt: 1 }, { taskId: 'retry', attempt: 1 }, { taskId: 'again', attempt: 1 }, { taskId: 'again', attempt: 2 }],
  acked: [end('ok', 1), end('retry', 2, { phase: 'failed', exitCode: 3 }), end('again', 1), end('again', 2)],
  creates: [
    { podName: 'r-ok-1', code: 201 }, { podName: 'r-retry-1', code: 201 }, { podName: 'r-retry-2', code: 201 }, { podName: 'r-again-1', code: 201 }, { podName: 'r-again-2', code: 201 },
  ],
};

describe('the crash verdict', () => {
  it('passes a clean run, a repeated delivery of the same end and a refused second create', () => {
    expect(crashVerdict(clean)).toEqual([]);
    // at least once: the same stored end acknowledged again after a kill is one end
    const repeated = { ...clean, acked: [...clean.acked, end('ok', 1)] };
    expect(crashVerdict(repeated)).toEqual([]);
    expect(redeliveries(repeated.acked)).toBe(1);
    // a create answered 409 (adopted) made no pod
    expect(crashVerdict({ ...clean, creates: [...clean.creates, { podName: 'r-ok-1', code: 409 }] })).toEqual([]);
  });

  it('catches two ends of one attempt', () => {
    expect(crashVerdict({ ...clean, acked: [...clean.acked, end('ok', 1, { phase: 'failed', exitCode: 1 })] })).toEqual([
      { kind: 'two-ends', taskId: 'ok', attempt: 1, ends: [expect.stringContaining('succeeded'), expect.stringContaining('failed')] },
    ]);
    // the same phase decided twice: told apart by its finishedAt
    expect(crashVerdict({ ...clean, acked: [...clean.acked, end('again', 2, { finishedAt: '2026-12-07T23:00:01.000Z' })] })).toMatchObject([{ kind: 'two-ends', taskId: 'again', attempt: 2 }]);
  });

  it('catches two pod creates (201) of one attempt', () => {
    expect(crashVerdict({ ...clean, creates: [...clean.creates, { podName: 'r-retry-2', code: 201 }] })).toEqual([{ kind: 'two-creates', podName: 'r-retry-2', creates: 2 }]);
  });

  it('catches a task never ended: asked, and no end of that attempt or a later one acknowledged', () => {
    expect(crashVerdict({ ...clean, asked: [...clean.asked, { taskId: 'lost', attempt: 1 }] })).toEqual([{ kind: 'never-ended', taskId: 'lost', attempt: 1 }]);
    // the next attempt asked for, only the first ended
    expect(crashVerdict({ ...clean, acked: clean.acked.filter((e) => !(e.taskId === 'again' && e.attempt === 2)) })).toEqual([{ kind: 'never-ended', taskId: 'again', attempt: 2 }]);
  });
});
