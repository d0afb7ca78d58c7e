import { describe, expect, it } from 'vitest';
import { collectWatch } from '../collect-watch.js';
import { leaseRecord } from '../records.js';
import { rejection } from '../wait-for.js';
import { codeOf, type StoreHarness } from './harness.js';

/** Get and create-if-absent: what a create stores, and a create on a key that exists. */
export function createCases(h: StoreHarness): void {
  const { store, eventTimeoutMs } = h;

  describe('get and create-if-absent', () => {
    it('get of a key never written is undefined', async () => {
      expect(await store().get('member/worker/nobody')).toBeUndefined();
    });

    it('create stores every field and the payload, and get returns them with the same version', async () => {
      const written = leaseRecord('w1', { cpu: 0.5, status: 'NORMAL', tags: ['a', 'ü'], nested: { n: null, ok: true } }, 3);
      const created = await store().create('member/worker/w1', written);
      expect(created.key).toBe('member/worker/w1');
      expect(typeof created.version).toBe('string');
      expect(created.version).not.toBe('');
      expect(created.record).toEqual(written);
      const got = await store().get('member/worker/w1');
      expect(got).toEqual({ key: 'member/worker/w1', version: created.version, record: written, created: created.created });
    });

    it("keeps a member record's withdraw mark (withdrawn) through update, get, list and watch; an update without it clears it", async () => {
      const created = await store().create('member/worker/w1', leaseRecord('w1', { items: [1] }));
      const watch = collectWatch(store(), 'member/worker/', (await store().list('member/worker/')).revision);
      const marked = await store().update('member/worker/w1', { ...created.record, withdrawn: true }, created.version);
      expect(marked.record).toEqual({ ...created.record, withdrawn: true });
      expect(await store().get('member/worker/w1')).toEqual(marked);
      expect((await store().list('member/worker/')).records).toEqual([marked]);
      const cleared = await store().update('member/worker/w1', created.record, marked.version);
      expect(cleared.record).toEqual(created.record);
      expect(await store().get('member/worker/w1')).toEqual(cleared);
      const seen = await watch.until((e) => e.type === 'put' && e.record.version === cleared.version, eventTimeoutMs);
      watch.close();
      // A watch that folds changes (ZooKeeper's) may leave the mark out; one it delivers is the record as written.
      for (const e of seen) expect([marked, cleared]).toContainEqual(e.type === 'put' ? e.record : e);
    });

    it('create on an existing key fails ALREADY_EXISTS and leaves the record as it was', async () => {
      const first = await store().create('election/e', leaseRecord('a'));
      const err = await rejection(store().create('election/e', leaseRecord('b')));
      expect(codeOf(err)).toBe('ALREADY_EXISTS');
      expect(await store().get('election/e')).toEqual(first);
    });
  });
}
