import { tableNames, type SqlRecordStore } from '@rollcall/sql';
import { describe, expect, it } from 'vitest';
import { collectWatch } from '../collect-watch.js';
import { leaseRecord } from '../records.js';
import { waitFor } from '../wait-for.js';
import { uniquePrefix, WAIT_MS, type SqlDesignHarness } from './harness.js';

/** The SQL design: purging the change table. */
export function purgeCases(h: SqlDesignHarness): void {
  const { name, options, open } = h;
  describe(`${name}: purge`, () => {
    it('a purge makes older revisions REVISION_TOO_OLD, keeps the newest change, and a watch from the current revision carries on', async () => {
      const prefix = uniquePrefix();
      const store = await open('c1', { tablePrefix: prefix });
      const db = (store as SqlRecordStore).database;
      let current = await store.create('member/w/a', leaseRecord('a'));
      const from = (await store.list('')).revision;
      for (let i = 1; i <= 3; i++) current = await store.update('member/w/a', leaseRecord('a', i), current.version);
      // Everything but the newest change (4): the poller tells "nothing new" from "purged" by it.
      expect(await db.purgeChanges({ all: true })).toBe(3);
      expect((await options.exec(`SELECT id FROM ${tableNames(prefix).changes}`)).map((r) => Number(r.id))).toEqual([4]);
      const old = collectWatch(store, '', '0');
      const behind = collectWatch(store, '', from);
      const last = collectWatch(store, '', '3');
      const now = collectWatch(store, '', (await store.list('')).revision);
      await waitFor(() => old.errors.length > 0 && behind.errors.length > 0, WAIT_MS, 'the old watches to end');
      expect(old.errors.map((e) => e.code)).toEqual(['REVISION_TOO_OLD']);
      expect(behind.errors.map((e) => e.code)).toEqual(['REVISION_TOO_OLD']);
      await store.create('member/w/b', leaseRecord('b'));
      await waitFor(() => now.all.length > 0 && last.all.length > 1, WAIT_MS, 'the current watches to see the write');
      expect(last.all).toMatchObject([{ type: 'put', revision: '4' }, { type: 'put', record: { key: 'member/w/b' }, revision: '5' }]);
      expect(now.all).toMatchObject([{ type: 'put', record: { key: 'member/w/b' }, revision: '5' }]);
      expect([...now.errors, ...last.errors]).toEqual([]);
      expect(await db.purgeChanges({ all: true })).toBe(4);
    });

    it('the scheduled purge deletes changes older than the retention and keeps the newer ones', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      const writer = await open('c1', { tablePrefix: prefix });
      for (let i = 0; i < 5; i++) await writer.create(`member/w/m${i}`, leaseRecord('a'));
      await options.exec(`UPDATE ${t.changes} SET created_ms = created_ms - 3600000 WHERE id <= 3`);
      await writer.close();
      // A process with a short purge interval and a one-hour retention: only the three aged changes go.
      await open('c1', { tablePrefix: prefix, purgeIntervalMs: 1000, changeRetentionMs: 1_800_000 });
      await waitFor(async () => Number((await options.exec(`SELECT purged_through FROM ${t.state}`))[0]!.purged_through) === 3, 15_000, 'the purge to run');
      expect((await options.exec(`SELECT id FROM ${t.changes} ORDER BY id`)).map((r) => Number(r.id))).toEqual([4, 5]);
    });
  });
}
