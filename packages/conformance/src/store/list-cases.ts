import { describe, expect, it } from 'vitest';
import { leaseRecord } from '../records.js';
import type { StoreHarness } from './harness.js';

/** List: the records under a string prefix, a revision, and the versions a compare-and-set needs. */
export function listCases(h: StoreHarness): void {
  const { store } = h;

  describe('list', () => {
    it('returns exactly the records under the prefix, and a revision', async () => {
      await store().create('member/worker/w1', leaseRecord('w1'));
      await store().create('member/worker/w2', leaseRecord('w2'));
      await store().create('member/workers/x', leaseRecord('x')); // shares a string prefix, not the role
      await store().create('lock/member', leaseRecord('l'));
      const list = await store().list('member/worker/');
      expect(list.records.map((r) => r.key).sort()).toEqual(['member/worker/w1', 'member/worker/w2']);
      expect(list.corrupt).toEqual([]);
      expect(typeof list.revision).toBe('string');
      expect(list.revision).not.toBe('');
      const all = await store().list('');
      expect(all.records.map((r) => r.key).sort()).toEqual(['lock/member', 'member/worker/w1', 'member/worker/w2', 'member/workers/x']);
    });

    it('a prefix is a string prefix: a whole record key lists that record and the keys that extend it', async () => {
      for (const key of ['election/e1', 'election/e10', 'election/e1.b', 'election/e2', 'lock/e1', 'member/w/a1', 'member/w/a10', 'member/w/a2']) await store().create(key, leaseRecord('x'));
      expect((await store().list('election/e1')).records.map((r) => r.key).sort()).toEqual(['election/e1', 'election/e1.b', 'election/e10']);
      expect((await store().list('member/w/a1')).records.map((r) => r.key).sort()).toEqual(['member/w/a1', 'member/w/a10']);
    });

    it('the records of a list carry the versions a compare-and-set needs', async () => {
      await store().create('lock/l', leaseRecord('a'));
      const [listed] = (await store().list('lock/')).records;
      const updated = await store().update('lock/l', leaseRecord('b'), listed!.version);
      expect(updated.record.holderIdentity).toBe('b');
    });
  });
}
