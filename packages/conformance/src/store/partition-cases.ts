import { hasCode } from '@rollcall/core';
import { expect, it } from 'vitest';
import { skipReason, type StoreCapabilities } from '../capabilities.js';
import { collectWatch } from '../collect-watch.js';
import { leaseRecord } from '../records.js';
import { rejection } from '../wait-for.js';
import { codeOf, type StoreHarness } from './harness.js';

/** An unreachable backend: every call fails UNAVAILABLE, open watches end, nothing is written. */
export function partitionCases(h: StoreHarness): void {
  const { name, capabilities, store, partitioned, eventTimeoutMs } = h;

  if (capabilities.partition && capabilities.heal) {
    const { partition, heal } = capabilities as Required<Pick<StoreCapabilities, 'partition' | 'heal'>>;
    it('an unreachable backend fails every call UNAVAILABLE, ends open watches, and writes nothing', async () => {
      const existing = await store().create('lock/l', leaseRecord('a'));
      const watch = collectWatch(store(), '', (await store().list('')).revision);
      partitioned.add(store());
      await partition(store());
      const calls: Promise<unknown>[] = [
        store().get('lock/l'),
        store().create('lock/new', leaseRecord('n')),
        store().update('lock/l', leaseRecord('b'), existing.version),
        store().delete('lock/l', existing.version),
        store().list(''),
      ];
      // Handlers go on every call at once: a slow backend rejects them while the first is awaited.
      const outcomes = calls.map((call) => rejection(call));
      for (const outcome of outcomes) expect(codeOf(await outcome)).toBe('UNAVAILABLE');
      const error = await watch.ended(eventTimeoutMs);
      expect(hasCode(error, 'REVISION_TOO_OLD')).toBe(false);
      watch.close();
      await heal(store());
      partitioned.delete(store());
      expect(await store().get('lock/new')).toBeUndefined();
      expect(await store().get('lock/l')).toEqual(existing);
    });
  } else {
    it.skip(skipReason(name, 'partition()/heal()', 'an unreachable backend fails calls with UNAVAILABLE'), () => {});
  }
}
