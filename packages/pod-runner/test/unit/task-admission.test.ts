import { ManualClock } from '@rollcall/core/testing';
import { describe, expect, it } from 'vitest';
import { TaskAdmission } from '../../src/task-admission.js';

const admission = (total: number, perType: Record<string, number> = {}, clock = new ManualClock()) => new TaskAdmission({ clock, total, perType, requeueDelayMs: 1_000, jitter: 0 });

describe('TaskAdmission', () => {
  it('admits in line order — joined, then submit sequence, then id — not in the order they were put in line', () => {
    const a = admission(2);
    a.enqueue('zeta', 'etl', { joinedAt: 1_000, seq: 1 });
    a.enqueue('beta', 'etl', { joinedAt: 2_000, seq: 1 });
    a.enqueue('alpha', 'etl', { joinedAt: 1_000, seq: 2 });
    a.enqueue('aardvark', 'etl', { joinedAt: 1_000, seq: 2 });
    expect(a.recompute()).toEqual(['zeta', 'aardvark']);
    expect(a.admits('alpha')).toBe(false);
  });

  it('a type at its limit lets the next task of another type by; live pods and creates in flight take slots', () => {
    const a = admission(3, { spark: 1 });
    a.occupy('running-spark', 'spark');
    a.enqueue('s1', 'spark', { joinedAt: 1, seq: 0 });
    a.enqueue('e1', 'etl', { joinedAt: 2, seq: 0 });
    a.enqueue('e2', 'etl', { joinedAt: 3, seq: 0 });
    a.enqueue('e3', 'etl', { joinedAt: 4, seq: 0 });
    expect(a.recompute()).toEqual(['e1', 'e2']);
    a.occupy('e1', 'etl');
    a.occupy('e2', 'etl');
    expect(a.recompute()).toEqual([]);
    a.release('running-spark');
    expect(a.recompute()).toEqual(['s1']);
    expect(a.admits('e3')).toBe(false);
  });

  it('recompute returns only the newly admitted: a task admitted before is not synced again for it', () => {
    const a = admission(2);
    a.enqueue('t1', 'x', { joinedAt: 1, seq: 0 });
    expect(a.recompute()).toEqual(['t1']);
    a.enqueue('t2', 'x', { joinedAt: 2, seq: 0 });
    expect(a.recompute()).toEqual(['t2']);
    expect(a.admits('t1')).toBe(true);
  });

  it('a quota refusal pauses every admission, doubling per refusal; a freed slot ends the pause, a create resets the doubling', async () => {
    const clock = new ManualClock();
    const a = admission(5, {}, clock);
    a.enqueue('t1', 'x', { joinedAt: 1, seq: 0 });
    a.recompute();
    expect(a.refused()).toBe(1_000);
    expect(a.admits('t1')).toBe(false);
    expect(a.recompute()).toEqual([]);
    await clock.advance(1_000);
    expect(a.pauseEndsInMs()).toBeUndefined();
    expect(a.recompute()).toEqual(['t1']);
    expect(a.refused()).toBe(2_000);
    a.occupy('other', 'x');
    a.release('other'); // a slot freed: quota freed too
    expect(a.recompute()).toEqual(['t1']);
    a.created();
    expect(a.refused()).toBe(1_000);
  });

  it('random line, slots and refusals (seeded): the admitted set is the greedy walk of the line, and admitted plus held never pass a limit', async () => {
    for (let seed = 1; seed <= 40; seed++) {
      let state = seed;
      const random = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const clock = new ManualClock();
      const total = 1 + Math.floor(random() * 6);
      const perType = { a: 1 + Math.floor(random() * 3), b: 1 + Math.floor(random() * 3) };
      const a = new TaskAdmission({ clock, total, perType, requeueDelayMs: 100, jitter: 0 });
      const line = new Map<string, { type: string; joinedAt: number; seq: number }>();
      const held = new Map<string, string>();
      for (let step = 0; step < 300; step++) {
        const r = random();
        const id = `t${Math.floor(random() * 30)}`;
        const type = ['a', 'b', 'c'][Math.floor(random() * 3)]!;
        if (r < 0.35 && !held.has(id)) {
          const place = { joinedAt: Math.floor(random() * 50), seq: Math.floor(random() * 3) };
          a.enqueue(id, type, place);
          line.set(id, { type, ...place });
        } else if (r < 0.55 && a.admits(id)) {
          a.occupy(id, line.get(id)!.type);
          held.set(id, line.get(id)!.type);
          line.delete(id);
        } else if (r < 0.7 && held.has(id)) {
          a.release(id);
          held.delete(id);
        } else if (r < 0.75) {
          a.refused();
        } else if (r < 0.85) {
          a.dequeue(id);
          line.delete(id);
        }
        a.recompute();
        // the reference: walk the line in order, take what fits
        const expected: string[] = [];
        if (a.pauseEndsInMs() === undefined) {
          let room = total - held.size;
          const typeRoom: Record<string, number> = { a: perType.a - [...held.values()].filter((t) => t === 'a').length, b: perType.b - [...held.values()].filter((t) => t === 'b').length };
          const ordered = [...line].sort(([ia, x], [ib, y]) => x.joinedAt - y.joinedAt || x.seq - y.seq || (ia < ib ? -1 : ia > ib ? 1 : 0));
          for (const [qid, q] of ordered) {
            if (room <= 0) break;
            if (q.type in typeRoom && typeRoom[q.type]! <= 0) continue;
            expected.push(qid);
            room--;
            if (q.type in typeRoom) typeRoom[q.type]!--;
          }
        }
        const admitted = [...line.keys()].filter((qid) => a.admits(qid));
        expect(admitted.sort(), `seed ${seed} step ${step}`).toEqual(expected.sort());
        expect(held.size + admitted.length, `seed ${seed} step ${step}: over the total`).toBeLessThanOrEqual(total);
        if (random() < 0.2) await clock.advance(Math.floor(random() * 300));
      }
    }
  });

  it('10,000 tasks in line: the 50 that joined first are admitted, whatever order they were put in line', () => {
    const a = admission(50);
    for (let i = 0; i < 10_000; i++) a.enqueue(`t${i}`, i % 2 ? 'x' : 'y', { joinedAt: 10_000 - i, seq: 0 });
    expect(a.recompute()).toHaveLength(50);
    expect(a.admits('t9999')).toBe(true); // joined first
    expect(a.waiting).toBe(10_000);
  });
});
