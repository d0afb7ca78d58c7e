import { tableNames } from '@rollcall/sql';
import { describe, expect, it } from 'vitest';
import { collectWatch } from '../collect-watch.js';
import { leaseRecord } from '../records.js';
import { waitFor } from '../wait-for.js';
import { uniquePrefix, WAIT_MS, type SqlDesignHarness } from './harness.js';

/** The SQL design: rows edited by hand into garbage. */
export function handEditCases(h: SqlDesignHarness): void {
  const { name, options, open, registry } = h;
  describe(`${name}: rows edited by hand into garbage`, () => {
    const garbage = ['not json at all', '{"holderIdentity": 5}', '[]', '{"holderIdentity":"a","leaseDurationSeconds":"soon","leaseTransitions":0}'];

    for (const value of garbage) {
      it(`a record whose value is ${JSON.stringify(value)} is reported corrupt by get and list, with a version that replaces it`, async () => {
        const prefix = uniquePrefix();
        const store = await open('c1', { tablePrefix: prefix });
        await store.create('member/w/bad', leaseRecord('bad'));
        await store.create('member/w/good', leaseRecord('good'));
        await options.exec(`UPDATE ${tableNames(prefix).records} SET record_value = ? WHERE record_key = ?`, [value, 'member/w/bad']);
        const err = await store.get('member/w/bad').then(
          () => undefined,
          (e: Error & { code: string; key: string }) => e,
        );
        expect(err?.code).toBe('CORRUPT_RECORD');
        expect(err?.key).toBe('member/w/bad');
        const list = await store.list('member/');
        expect(list.records.map((r) => r.key)).toEqual(['member/w/good']);
        expect(list.corrupt).toMatchObject([{ key: 'member/w/bad', version: '1', error: { code: 'CORRUPT_RECORD' } }]);
        await store.update('member/w/bad', leaseRecord('fixed'), list.corrupt[0]!.version);
        expect((await store.get('member/w/bad'))!.record.holderIdentity).toBe('fixed');
      });
    }

    it('a change row edited into garbage is a corrupt event, and the watch carries on with the next change', async () => {
      const prefix = uniquePrefix();
      const store = await open('c1', { tablePrefix: prefix });
      const from = (await store.list('')).revision;
      await store.create('member/w/a', leaseRecord('a'));
      await options.exec(`UPDATE ${tableNames(prefix).changes} SET record_value = ? WHERE id = 1`, ['{{{ garbage']);
      const w = collectWatch(store, '', from);
      await store.create('member/w/b', leaseRecord('b'));
      await waitFor(() => w.all.length >= 2, WAIT_MS, 'both changes');
      expect(w.all).toMatchObject([
        { type: 'corrupt', entry: { key: 'member/w/a', version: '1', error: { code: 'CORRUPT_RECORD' } }, revision: '1' },
        { type: 'put', record: { key: 'member/w/b' }, revision: '2' },
      ]);
      expect(w.errors).toEqual([]);
    });

    it('a registry reports a garbage member record as corruptRecord and keeps serving the others', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      const writer = await registry('c1', 'writer', { tablePrefix: prefix, pollIntervalMs: 50 });
      await writer.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
      const reader = await registry('c1', 'reader', { tablePrefix: prefix, pollIntervalMs: 50 });
      const corrupt: string[] = [];
      reader.on('corruptRecord', (e) => corrupt.push(e.key));
      await reader.members('worker'); // what it reads
      // A hand edit through the change table, as a watch reads it: a write whose value is garbage.
      const [state] = await options.exec(`SELECT revision FROM ${t.state}`);
      const next = Number(state!.revision) + 1;
      await options.exec(`UPDATE ${t.state} SET revision = ? WHERE id = 1`, [next]);
      await options.exec(`UPDATE ${t.records} SET record_value = ?, record_version = ? WHERE record_key = ?`, ['garbage', next, 'member/worker/w1']);
      await options.exec(`INSERT INTO ${t.changes} (id, cluster_name, record_key, record_version, record_value, created_ms) VALUES (?, ?, ?, ?, ?, ?)`, [
        next,
        'c1',
        'member/worker/w1',
        next,
        'garbage',
        Date.now(),
      ]);
      await waitFor(() => corrupt.length > 0, WAIT_MS, 'the corruptRecord event');
      expect(corrupt).toEqual(['member/worker/w1']);
      const added: string[] = [];
      reader.watchMembers('worker', (e) => e.type === 'added' && added.push(e.member.id));
      await writer.announce({ role: 'worker', id: 'w2' });
      await waitFor(() => added.includes('w2'), WAIT_MS, 'the next member');
      expect(reader.state).toBe('connected');
    });
  });
}
