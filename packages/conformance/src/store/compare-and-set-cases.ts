import { describe, expect, it } from 'vitest';
import { leaseRecord } from '../records.js';
import { rejection } from '../wait-for.js';
import { codeOf, type StoreHarness } from './harness.js';

/** Compare-and-set update and delete: the version a write needs, and what a stale or missing one does. */
export function compareAndSetCases(h: StoreHarness): void {
  const { store } = h;

  describe('compare-and-set update', () => {
    it('update on the current version replaces the record and returns a new version', async () => {
      const created = await store().create('lock/l', leaseRecord('a'));
      const updated = await store().update('lock/l', leaseRecord('b', undefined, 2), created.version);
      expect(updated.version).not.toBe(created.version);
      expect(updated.record.holderIdentity).toBe('b');
      expect(await store().get('lock/l')).toEqual(updated);
    });

    it('every update yields a new version, even when the content is identical', async () => {
      const same = leaseRecord('a');
      let current = await store().create('lock/l', same);
      const seen = new Set([current.version]);
      for (let i = 0; i < 5; i++) {
        current = await store().update('lock/l', same, current.version);
        expect(seen.has(current.version)).toBe(false);
        seen.add(current.version);
      }
    });

    it('update on a stale version fails CONFLICT and changes nothing', async () => {
      const created = await store().create('lock/l', leaseRecord('a'));
      const updated = await store().update('lock/l', leaseRecord('b'), created.version);
      const err = await rejection(store().update('lock/l', leaseRecord('c'), created.version));
      expect(codeOf(err)).toBe('CONFLICT');
      expect(await store().get('lock/l')).toEqual(updated);
    });

    it('update of a missing key fails NOT_FOUND and creates nothing', async () => {
      const created = await store().create('lock/other', leaseRecord('a'));
      const err = await rejection(store().update('lock/l', leaseRecord('b'), created.version));
      expect(codeOf(err)).toBe('NOT_FOUND');
      expect(await store().get('lock/l')).toBeUndefined();
    });
  });

  describe('compare-and-set delete', () => {
    it('delete on the current version removes the record', async () => {
      const created = await store().create('member/worker/w1', leaseRecord('w1'));
      await store().delete('member/worker/w1', created.version);
      expect(await store().get('member/worker/w1')).toBeUndefined();
    });

    it('delete on a stale version fails CONFLICT and the record stays', async () => {
      const created = await store().create('member/worker/w1', leaseRecord('w1'));
      const updated = await store().update('member/worker/w1', leaseRecord('w1', { n: 2 }), created.version);
      const err = await rejection(store().delete('member/worker/w1', created.version));
      expect(codeOf(err)).toBe('CONFLICT');
      expect(await store().get('member/worker/w1')).toEqual(updated);
    });

    it('delete of a missing key fails NOT_FOUND', async () => {
      const created = await store().create('member/worker/w1', leaseRecord('w1'));
      await store().delete('member/worker/w1', created.version);
      const err = await rejection(store().delete('member/worker/w1', created.version));
      expect(codeOf(err)).toBe('NOT_FOUND');
    });

    it('a deleted-then-recreated record never matches a version of its earlier life', async () => {
      const first = await store().create('election/e', leaseRecord('a'));
      await store().delete('election/e', first.version);
      const second = await store().create('election/e', leaseRecord('b'));
      expect(second.version).not.toBe(first.version);
      // A holder of the first life must not overwrite or delete the second one.
      expect(codeOf(await rejection(store().update('election/e', leaseRecord('a'), first.version)))).toBe('CONFLICT');
      expect(codeOf(await rejection(store().delete('election/e', first.version)))).toBe('CONFLICT');
      expect(await store().get('election/e')).toEqual(second);
    });
  });
}
