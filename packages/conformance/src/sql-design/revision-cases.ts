import type { LeaseRecord, RecordStore } from '@rollcall/core/spi';
import { tableNames } from '@rollcall/sql';
import { describe, expect, it } from 'vitest';
import { collectWatch } from '../collect-watch.js';
import { leaseRecord } from '../records.js';
import { waitFor } from '../wait-for.js';
import { codeOf, uniquePrefix, WAIT_MS, type SqlDesignHarness } from './harness.js';

/** The SQL design: the revision counter and the change table. */
export function revisionCases(h: SqlDesignHarness): void {
  const { name, options, open, stores } = h;
  describe(`${name}: revisions and the change table`, () => {
    it('every write takes the next revision: versions strictly increase, also across delete and re-create, and the change ids have no gaps', async () => {
      const prefix = uniquePrefix();
      const store = await open('c1', { tablePrefix: prefix });
      const v1 = (await store.create('lock/x', leaseRecord('a'))).version;
      const v2 = (await store.update('lock/x', leaseRecord('b'), v1)).version;
      await store.delete('lock/x', v2);
      const v4 = (await store.create('lock/x', leaseRecord('c'))).version;
      expect([v1, v2, v4].map(Number)).toEqual([1, 2, 4]);
      expect(await codeOf(store.update('lock/x', leaseRecord('d'), v1))).toBe('CONFLICT');
      const rows = await options.exec(`SELECT id, record_value FROM ${tableNames(prefix).changes} ORDER BY id`);
      expect(rows.map((r) => Number(r.id))).toEqual([1, 2, 3, 4]);
      expect(rows[2]!.record_value).toBeNull();
    });

    it('concurrent writers from several stores get unique, gapless revisions, and exactly one CAS per version wins', async () => {
      const prefix = uniquePrefix();
      const writers = await Promise.all(Array.from({ length: 4 }, () => open('c1', { tablePrefix: prefix })));
      await Promise.all(Array.from({ length: 20 }, (_, i) => writers[i % 4]!.create(`member/w/m${i}`, leaseRecord(`m${i}`))));
      const base = await writers[0]!.create('lock/counter', leaseRecord('x', 0));
      let current = base;
      for (let round = 0; round < 5; round++) {
        const attempts = await Promise.allSettled(writers.map((w, i) => w.update('lock/counter', leaseRecord(`w${i}`, round + 1), current.version)));
        const won = attempts.filter((a) => a.status === 'fulfilled');
        expect(won).toHaveLength(1);
        for (const lost of attempts.filter((a) => a.status === 'rejected')) expect((lost as PromiseRejectedResult).reason.code).toBe('CONFLICT');
        current = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<RecordStore['update']>>>).value;
      }
      const ids = (await options.exec(`SELECT id FROM ${tableNames(prefix).changes} ORDER BY id`)).map((r) => Number(r.id));
      expect(ids).toEqual(Array.from({ length: 26 }, (_, i) => i + 1));
      expect((await writers[1]!.get('lock/counter'))!.record.payload).toBe(5);
    });

    it('bad input is INVALID_ARGUMENT and writes nothing', async () => {
      const prefix = uniquePrefix();
      const store = await open('c1', { tablePrefix: prefix });
      const bad: Promise<unknown>[] = [
        store.create('', leaseRecord('a')),
        store.create('member/w/ü', leaseRecord('a')),
        store.create('member/w/has space', leaseRecord('a')),
        store.create(`lock/${'x'.repeat(400)}`, leaseRecord('a')),
        store.create('lock/x', { ...leaseRecord('a'), holderIdentity: 42 } as unknown as LeaseRecord),
        store.create('lock/x', { ...leaseRecord('a'), leaseDurationSeconds: -1 }),
        store.update('lock/x', { ...leaseRecord('a'), leaseTransitions: 1.5 }, '1'),
        store.get('lock/\n'),
      ];
      for (const attempt of bad) expect(await codeOf(attempt)).toBe('INVALID_ARGUMENT');
      expect(await codeOf(store.list('mémber/'))).toBe('INVALID_ARGUMENT');
      expect(Number((await options.exec(`SELECT revision FROM ${tableNames(prefix).state}`))[0]!.revision)).toBe(0);
      expect(await options.exec(`SELECT id FROM ${tableNames(prefix).changes}`)).toEqual([]);
    });

    it('a version this store never issued fails CONFLICT, and NOT_FOUND for a missing key', async () => {
      const store = await open('c1', { tablePrefix: uniquePrefix() });
      await store.create('lock/x', leaseRecord('a'));
      for (const version of ['', 'abc', '-1', '1e3', '99999999999999999999']) expect(await codeOf(store.update('lock/x', leaseRecord('b'), version))).toBe('CONFLICT');
      expect(await codeOf(store.delete('lock/y', 'abc'))).toBe('NOT_FOUND');
    });

    it('a watch from a revision that is not a number ends with REVISION_TOO_OLD', async () => {
      const store = await open('c1', { tablePrefix: uniquePrefix() });
      const w = collectWatch(store, '', 'not-a-revision');
      await waitFor(() => w.errors.length > 0, WAIT_MS, 'the watch to end');
      expect(w.errors.map((e) => e.code)).toEqual(['REVISION_TOO_OLD']);
    });
  });
}
