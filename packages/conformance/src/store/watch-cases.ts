import { supports, SUPPORTED_MEMBERS } from '@rollcall/core/admin';
import type { WatchEvent } from '@rollcall/core/spi';
import { describe, expect, it } from 'vitest';
import { skipReason } from '../capabilities.js';
import { collectWatch, describeEvent } from '../collect-watch.js';
import { leaseRecord } from '../records.js';
import { waitFor } from '../wait-for.js';
import type { StoreHarness } from './harness.js';

/** Watch: from a list revision, by prefix or exact key, resumed, synced progress, close, a compacted revision; the `supports` manifest. */
export function watchCases(h: StoreHarness): void {
  const { name, capabilities, store, eventTimeoutMs } = h;

  describe('watch', () => {
    it('from a list revision sees exactly the later puts and deletes under the prefix, in order, and nothing earlier', async () => {
      const a = await store().create('member/worker/a', leaseRecord('a'));
      const b = await store().create('member/worker/b', leaseRecord('b'));
      const a1 = await store().update('member/worker/a', leaseRecord('a', { n: 1 }), a.version);
      const list = await store().list('member/worker/');
      const watch = collectWatch(store(), 'member/worker/', list.revision);
      const a2 = await store().update('member/worker/a', leaseRecord('a', { n: 2 }), a1.version);
      await store().delete('member/worker/b', b.version);
      await store().create('lock/outside', leaseRecord('outside'));
      await store().create('member/workers/outside', leaseRecord('outside'));
      const c = await store().create('member/worker/c', leaseRecord('c'));
      const end = await store().create('member/worker/zz-end', leaseRecord('end'));
      const seen = await watch.until((e) => e.type === 'put' && e.record.key === 'member/worker/zz-end', eventTimeoutMs);
      watch.close();
      expect(seen.map(describeEvent)).toEqual(['put member/worker/a a', 'delete member/worker/b', 'put member/worker/c c', 'put member/worker/zz-end end']);
      // Each put carries the record and the version its write returned.
      const puts = seen.filter((e) => e.type === 'put');
      expect(puts.map((e) => e.record)).toEqual([a2, c, end]);
      expect(new Set(seen.map((e) => e.revision)).size).toBe(seen.length);
    });

    it('of a whole record key sees that record and the keys that extend it, and nothing else', async () => {
      const list = await store().list('election/e1');
      const watch = collectWatch(store(), 'election/e1', list.revision);
      await store().create('election/e2', leaseRecord('outside'));
      await store().create('lock/e1', leaseRecord('outside'));
      await store().create('election/e10', leaseRecord('e10'));
      await store().create('election/e1', leaseRecord('a'));
      // One write per key: a migrate store's merged watch may fold two quick writes of one key into the last.
      await store().create('election/e1z', leaseRecord('end'));
      const seen = await watch.until((e) => e.type === 'put' && e.record.record.holderIdentity === 'end', eventTimeoutMs);
      watch.close();
      expect(seen.map(describeEvent)).toEqual(['put election/e10 e10', 'put election/e1 a', 'put election/e1z end']);
    });

    it('asked for exactly one record, sees that record, may leave out the keys that extend it, and nothing outside the prefix', async () => {
      const list = await store().list('election/x1', { exact: true });
      expect(list.records).toEqual([]);
      const watch = collectWatch(store(), 'election/x1', list.revision, { exact: true });
      await store().create('election/x2', leaseRecord('outside'));
      await store().create('election/x10', leaseRecord('x10'));
      await store().create('election/x1', leaseRecord('end'));
      const seen = await watch.until((e) => e.type === 'put' && e.record.key === 'election/x1', eventTimeoutMs);
      watch.close();
      expect(seen.map(describeEvent).filter((e) => e !== 'put election/x10 x10')).toEqual(['put election/x1 end']);
      const again = await store().list('election/x1', { exact: true });
      expect(again.records.map((r) => r.key).filter((k) => k !== 'election/x10')).toEqual(['election/x1']);
    });

    it('from the revision of an empty prefix sees the first write', async () => {
      const list = await store().list('election/');
      expect(list.records).toEqual([]);
      const watch = collectWatch(store(), 'election/', list.revision);
      const created = await store().create('election/e', leaseRecord('a'));
      const seen = await watch.until((e) => e.type === 'put', eventTimeoutMs);
      watch.close();
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ type: 'put', record: created });
    });

    it('resumed from the revision of a seen event, repeats nothing and misses nothing', async () => {
      const list = await store().list('lock/');
      const first = collectWatch(store(), 'lock/', list.revision);
      const one = await store().create('lock/one', leaseRecord('1'));
      await store().create('lock/two', leaseRecord('2'));
      const seen = await first.until((e) => e.type === 'put' && e.record.key === 'lock/two', eventTimeoutMs);
      first.close();
      const resumeFrom = seen.find((e) => e.type === 'put' && e.record.key === 'lock/one')!.revision;
      const resumed = collectWatch(store(), 'lock/', resumeFrom);
      await store().update('lock/one', leaseRecord('1b'), one.version);
      const again = await resumed.until((e) => e.type === 'put' && e.record.record.holderIdentity === '1b', eventTimeoutMs);
      resumed.close();
      expect(again.map(describeEvent)).toEqual(['put lock/two 2', 'put lock/one 1b']);
    });

    it('a progress marked synced comes after every change since the start revision (required where the store declares supports.syncedProgress)', async () => {
      const list = await store().list('lock/');
      const one = await store().create('lock/s1', leaseRecord('1'));
      await store().update('lock/s1', leaseRecord('1b'), one.version);
      await store().create('lock/s2', leaseRecord('2'));
      const watch = collectWatch(store(), 'lock/', list.revision);
      await watch.until((e) => e.type === 'put' && e.record.key === 'lock/s2', eventTimeoutMs);
      await store().create('lock/zz-end', leaseRecord('end'));
      await watch.until((e) => e.type === 'put' && e.record.key === 'lock/zz-end', eventTimeoutMs);
      const isSynced = (e: WatchEvent) => e.type === 'progress' && e.synced === true;
      if (supports(store(), 'syncedProgress')) await waitFor(() => watch.all.some(isSynced), eventTimeoutMs, 'a synced progress');
      watch.close();
      const synced = watch.all.findIndex(isSynced);
      if (synced < 0) return; // this store marks none: the capability would have required one
      // What the listener knew when told it was synced: each key's last state (a store may fold two writes of a key).
      const known = new Map<string, string>();
      for (const e of watch.all.slice(0, synced)) if (e.type === 'put' && e.record.key !== 'lock/zz-end') known.set(e.record.key, e.record.record.holderIdentity);
      expect(Object.fromEntries(known)).toEqual({ 'lock/s1': '1b', 'lock/s2': '2' });
    });

    it('declares what it supports: each capability its manifest names has its member, and no optional member is there undeclared', () => {
      expect(store().supports, 'RecordStore.supports: `{}` when the store has nothing optional').toBeTypeOf('object');
      for (const [capability, member] of SUPPORTED_MEMBERS) {
        const present = (store() as unknown as Record<string, unknown>)[member] !== undefined;
        // supports() throws, naming the member, when a declared capability lacks it
        expect(supports(store(), capability), `${member} is ${present ? 'present' : 'absent'}: declare supports.${capability} ${present ? 'true' : 'false'}`).toBe(present);
      }
    });

    it('delivers nothing after close()', async () => {
      const list = await store().list('lock/');
      const closed = collectWatch(store(), 'lock/', list.revision);
      const open = collectWatch(store(), 'lock/', list.revision);
      await store().create('lock/a', leaseRecord('a'));
      await closed.until((e) => e.type === 'put', eventTimeoutMs);
      closed.close();
      await store().create('lock/b', leaseRecord('b'));
      await open.until((e) => e.type === 'put' && e.record.key === 'lock/b', eventTimeoutMs);
      open.close();
      expect(closed.events.map(describeEvent)).toEqual(['put lock/a a']);
    });

    if (capabilities.compact) {
      const compact = capabilities.compact;
      it('from a revision older than the store keeps ends with REVISION_TOO_OLD, and a relist recovers', async () => {
        const list = await store().list('');
        let current = await store().create('lock/l', leaseRecord('a'));
        for (let i = 0; i < 3; i++) current = await store().update('lock/l', leaseRecord(`a${i}`), current.version);
        await compact();
        const watch = collectWatch(store(), '', list.revision);
        const error = await watch.ended(eventTimeoutMs);
        watch.close();
        expect(error.code).toBe('REVISION_TOO_OLD');
        expect(watch.events).toEqual([]);
        // The caller's recovery: list again and watch from the new revision.
        const relisted = await store().list('');
        expect(relisted.records).toEqual([current]);
        const resumed = collectWatch(store(), '', relisted.revision);
        await store().delete('lock/l', current.version);
        const seen = await resumed.until((e) => e.type === 'delete', eventTimeoutMs);
        resumed.close();
        expect(seen.map(describeEvent)).toEqual(['delete lock/l']);
      });
    } else {
      it.skip(skipReason(name, 'compact()', 'a watch from a compacted revision ends with REVISION_TOO_OLD'), () => {});
    }
  });
}
