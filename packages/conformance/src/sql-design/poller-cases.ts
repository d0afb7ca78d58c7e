import type { SqlRecordStore } from '@rollcall/sql';
import { describe, expect, it } from 'vitest';
import { collectWatch } from '../collect-watch.js';
import { leaseRecord } from '../records.js';
import { observeFor, waitFor } from '../wait-for.js';
import { uniquePrefix, WAIT_MS, type SqlDesignHarness } from './harness.js';

/** The SQL design: the change poller that serves every watch of a process. */
export function pollerCases(h: SqlDesignHarness): void {
  const { name, open } = h;
  describe(`${name}: the change poller`, () => {
    it('serves every watch of the process, across clusters and prefixes, with one query per interval', async () => {
      const prefix = uniquePrefix();
      const pollIntervalMs = 100;
      const clusters = await Promise.all(['c1', 'c2', 'c3'].map((c) => open(c, { tablePrefix: prefix, pollIntervalMs })));
      const poller = (clusters[0] as SqlRecordStore).database.poller;
      for (const s of clusters) expect((s as SqlRecordStore).database.poller).toBe(poller);
      const watches = clusters.flatMap((s) => Array.from({ length: 10 }, (_, i) => collectWatch(s, i % 2 ? 'member/' : '', '0')));
      const startQueries = poller.queries;
      const started = Date.now();
      await clusters[1]!.create('member/w/a', leaseRecord('a'));
      await waitFor(() => watches.slice(10, 20).every((w) => w.all.some((e) => e.type === 'put')), WAIT_MS, 'every watch of c2 to see the write');
      // Idle for a few intervals: the count grows by one per interval, not by one per watch.
      await observeFor(5 * pollIntervalMs);
      const elapsed = Date.now() - started;
      const queries = poller.queries - startQueries;
      expect(queries).toBeGreaterThan(0);
      expect(queries).toBeLessThanOrEqual(Math.ceil(elapsed / pollIntervalMs) + 3);
      expect(watches.slice(0, 10).every((w) => w.all.every((e) => e.type === 'progress'))).toBe(true);
      for (const w of watches) expect(w.errors).toEqual([]);
    });

    it('a watch whose last changes were all in other clusters gets a progress bookmark, and resumes from it', async () => {
      const prefix = uniquePrefix();
      const mine = await open('c1', { tablePrefix: prefix });
      const other = await open('c2', { tablePrefix: prefix });
      const w = collectWatch(mine, '', '0');
      await other.create('lock/x', leaseRecord('a'));
      await waitFor(() => w.all.some((e) => e.type === 'progress'), WAIT_MS, 'a progress event');
      expect(w.all).toEqual([{ type: 'progress', revision: '1' }]);
    });
  });
}
