import { supports } from '@rollcall/core/admin';
import { describe, expect, it } from 'vitest';
import { collectWatch } from '../collect-watch.js';
import { uniqueCluster } from '../names.js';
import { leaseRecord } from '../records.js';
import { rejection } from '../wait-for.js';
import { codeOf, type StoreHarness } from './harness.js';

/** The creation order (`StoredRecord.created`): kept by updates, new for each life of a key, unique, ordered where declared. */
export function creationOrderCases(h: StoreHarness): void {
  const { store, open, eventTimeoutMs } = h;

  describe('creation order (StoredRecord.created)', () => {
    /** A decimal integer string, compared as a bigint (a ZooKeeper zxid passes 2^53). */
    const order = (created: string): bigint => {
      expect(created).toMatch(/^\d+$/);
      return BigInt(created);
    };

    it('create returns a creation order, and get, list and watch report the same one', async () => {
      const list = await store().list('member/worker/');
      const watch = collectWatch(store(), 'member/worker/', list.revision);
      const made = await store().create('member/worker/c1', leaseRecord('c1'));
      expect(typeof made.created).toBe('string');
      expect(made.created).not.toBe('');
      expect((await store().get('member/worker/c1'))?.created).toBe(made.created);
      expect((await store().list('member/worker/')).records.find((r) => r.key === 'member/worker/c1')?.created).toBe(made.created);
      const seen = await watch.until((e) => e.type === 'put' && e.record.key === 'member/worker/c1', eventTimeoutMs);
      watch.close();
      const put = seen.find((e) => e.type === 'put' && e.record.key === 'member/worker/c1');
      expect(put?.type === 'put' ? put.record.created : undefined).toBe(made.created);
    });

    it('update keeps the creation order, in its result, get, list and watch; so does a failed compare-and-set', async () => {
      const made = await store().create('member/worker/c2', leaseRecord('c2'));
      const list = await store().list('member/worker/');
      const watch = collectWatch(store(), 'member/worker/', list.revision);
      const u1 = await store().update('member/worker/c2', leaseRecord('c2', { n: 1 }), made.version);
      const u2 = await store().update('member/worker/c2', leaseRecord('c2', { n: 2 }), u1.version);
      expect(u1.created).toBe(made.created);
      expect(u2.created).toBe(made.created);
      expect(codeOf(await rejection(store().update('member/worker/c2', leaseRecord('c2', { n: 3 }), made.version)))).toBe('CONFLICT');
      expect((await store().get('member/worker/c2'))?.created).toBe(made.created);
      expect((await store().list('member/worker/c2')).records[0]?.created).toBe(made.created);
      const seen = await watch.until((e) => e.type === 'put' && e.record.version === u2.version, eventTimeoutMs);
      watch.close();
      const puts = seen.filter((e) => e.type === 'put');
      expect(puts.length).toBeGreaterThan(0);
      for (const e of puts) expect(e.type === 'put' ? e.record.created : undefined).toBe(made.created);
    });

    it('a deleted-then-recreated record has a new creation order, never one of its earlier life', async () => {
      const lives: string[] = [];
      for (let i = 0; i < 3; i++) {
        const made = await store().create('lock/c3', leaseRecord(`life${i}`));
        const updated = await store().update('lock/c3', leaseRecord(`life${i}`, { n: 1 }), made.version);
        lives.push(made.created);
        await store().delete('lock/c3', updated.version);
      }
      expect(new Set(lives).size).toBe(3);
      if (supports(store(), 'orderedCreation')) expect(lives.map(order)).toEqual([...lives.map(order)].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
    });

    it('creation orders are unique across keys and across clusters on one backend', async () => {
      const other = await open(uniqueCluster('store'));
      const seen: string[] = [];
      for (let i = 0; i < 4; i++) {
        seen.push((await store().create(`member/worker/u${i}`, leaseRecord(`u${i}`))).created);
        seen.push((await other.create(`member/worker/u${i}`, leaseRecord(`u${i}`))).created);
      }
      expect(new Set(seen).size).toBe(seen.length);
    });

    it('with supports.orderedCreation, a decimal integer, and every later create has a larger one, across keys and prefixes', async (ctx) => {
      if (!supports(store(), 'orderedCreation')) {
        ctx.skip();
        return;
      }
      const keys = ['member/worker/o2', 'lock/o1', 'election/o3', 'member/worker/o1'];
      const made = [];
      for (const key of keys) made.push(await store().create(key, leaseRecord('o')));
      // An update in between moves no creation.
      await store().update('lock/o1', leaseRecord('o', { n: 1 }), made[1]!.version);
      made.push(await store().create('member/worker/o0', leaseRecord('o')));
      const orders = made.map((m) => order(m.created));
      for (let i = 1; i < orders.length; i++) expect(orders[i]! > orders[i - 1]!).toBe(true);
    });
  });
}
