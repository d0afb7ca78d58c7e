import type { MemberEvent } from '@rollcall/core';
import { registryStore, supports } from '@rollcall/core/admin';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../wait-for.js';
import { logMembers, type Harness } from './harness.js';

/** An event as `type id@incarnation`, with the reason of a removal. */
const line = (e: MemberEvent) => `${e.type} ${e.member.id}@${e.member.incarnation}${e.type === 'removed' ? ` ${e.reason}` : ''}`;

/** Incarnations: every announce is a new one; events and members() name the same; an updated never spans two. */
export function incarnationCases(h: Harness): void {
  const bound = h.timings.watchBoundMs;

  describe('member incarnations', () => {
    it('a withdraw and a re-announce of one id is removed then added with a new incarnation; members(), events and the handle agree', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const log = logMembers(b, 'worker');
      const first = await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
      const i1 = first.incarnation!;
      expect(i1).toBeTypeOf('string');
      await log.next((e) => e.type === 'added', bound);
      expect((await b.members('worker')).map((m) => m.incarnation)).toEqual([i1]);
      await first.update({ n: 2 });
      await log.next((e) => e.type === 'updated', bound);
      expect(first.incarnation).toBe(i1);
      await first.withdraw();
      await log.next((e) => e.type === 'removed', bound);
      const second = await a.announce({ role: 'worker', id: 'w1', payload: { n: 3 } });
      const i2 = second.incarnation!;
      expect(i2).not.toBe(i1);
      await log.next((e) => e.type === 'added', bound, 3);
      expect(log.events.map(line)).toEqual([`added w1@${i1}`, `updated w1@${i1}`, `removed w1@${i1} deleted`, `added w1@${i2}`]);
      expect(log.events[1]).toMatchObject({ previous: { incarnation: i1 } });
      expect((await b.members('worker')).map((m) => m.incarnation)).toEqual([i2]);
      expect((await a.members('worker')).map((m) => m.incarnation)).toEqual([i2]);
      if (supports(registryStore(b), 'orderedCreation')) expect(BigInt(i2)).toBeGreaterThan(BigInt(i1));
    });

    it('a re-announce right after a withdraw (the watch may coalesce the two) is still removed then added, never updated', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const log = logMembers(b, 'worker');
      const first = await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
      const i1 = first.incarnation!;
      await log.next((e) => e.type === 'added', bound);
      await first.withdraw();
      const second = await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } }); // the same payload: nothing but the incarnation tells the two apart
      const i2 = second.incarnation!;
      await log.next((e) => e.type === 'added' && e.member.incarnation === i2, bound);
      // `deleted` when the reader saw the delete, `replaced` when its watch or a relist folded it into the create.
      expect(log.events.map(line)).toEqual([`added w1@${i1}`, `removed w1@${i1} ${(log.events[1] as { reason?: string }).reason}`, `added w1@${i2}`]);
      expect(['deleted', 'replaced']).toContain((log.events[1] as { reason?: string }).reason);
      await waitFor(async () => ((await b.members('worker'))[0]?.incarnation === i2 ? true : undefined), bound, 'members() to name the new incarnation');
    });
  });
}
