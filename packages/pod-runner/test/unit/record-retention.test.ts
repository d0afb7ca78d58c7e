import { describe, expect, it } from 'vitest';
import { ManualClock, seeded } from '@rollcall/core/testing';
import { DEFAULT_RECORD_RETAIN_DONE_MS, deleteAt, dueRecords } from '../../src/record-retention.js';
import type { TaskRecordState } from '../../src/task-record.js';


const HOUR = 3_600_000;

describe('record retention (age only)', () => {
  it('20000 done records, none removed before retainDoneMs (manual clock)', async () => {
    const clock = new ManualClock();
    const start = clock.wallNow().getTime();
    const random = seeded(35);
    // acknowledged over the first hour, in random order; 500 queued and 500 finished beside them that are never due
    const records = Array.from({ length: 21_000 }, (_, i) => {
      const state: TaskRecordState = i < 20_000 ? 'done' : i < 20_500 ? 'queued' : 'finished';
      return { name: `rollcall-task-t${i}`, body: { state, ...(state === 'done' ? { ackedAt: start + Math.floor(random() * HOUR) } : {}) } };
    });
    const removed = new Map<string, number>();
    const live = new Map(records.map((r) => [r.name, r]));
    let wakeUps = 0;
    // follow the wake-ups it asks for, as the sync loop would, until nothing is left to remove
    for (let next: number | undefined = start; next !== undefined; ) {
      await clock.advance(Math.max(0, next - clock.wallNow().getTime()));
      const now = clock.wallNow().getTime();
      const { due, nextAt } = dueRecords(live.values(), now, DEFAULT_RECORD_RETAIN_DONE_MS);
      for (const name of due) {
        removed.set(name, now);
        live.delete(name);
      }
      wakeUps += 1;
      next = nextAt;
    }
    expect(removed.size).toBe(20_000);
    for (const r of records.slice(0, 20_000)) {
      const at = removed.get(r.name)!;
      // never early, and on time: the wake-up is the record's own deadline
      expect(at).toBe(r.body.ackedAt! + DEFAULT_RECORD_RETAIN_DONE_MS);
    }
    expect([...live.values()].map((r) => r.body.state).sort()).toEqual([...Array(500).fill('finished'), ...Array(500).fill('queued')]);
    expect(wakeUps).toBeLessThanOrEqual(20_001);
  });

  it('at one instant: due are exactly the done records acknowledged retainDoneMs ago or more, oldest first; nextAt the earliest other', () => {
    const now = Date.UTC(2026, 11, 7, 16);
    const retain = 24 * HOUR;
    const records = [
      { name: 'b', body: { state: 'done' as const, ackedAt: now - retain } },
      { name: 'a', body: { state: 'done' as const, ackedAt: now - retain - 1 } },
      { name: 'c', body: { state: 'done' as const, ackedAt: now - retain + 1 } },
      { name: 'd', body: { state: 'done' as const, ackedAt: now - 1 } },
      { name: 'q', body: { state: 'queued' as const } },
      { name: 'f', body: { state: 'finished' as const } },
    ];
    expect(dueRecords(records, now, retain)).toEqual({ due: ['a', 'b'], nextAt: now + 1 });
    expect(dueRecords(records.slice(4), now, retain)).toEqual({ due: [] });
    expect(deleteAt({ state: 'finished', ackedAt: 5 }, retain)).toBeUndefined();
    expect(deleteAt({ state: 'done', ackedAt: 5 }, retain)).toBe(5 + retain);
  });
});
