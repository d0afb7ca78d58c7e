import { expect, it } from 'vitest';
import { collectWatch, describeEvent } from '../collect-watch.js';
import { uniqueCluster } from '../names.js';
import { leaseRecord } from '../records.js';
import { rejection } from '../wait-for.js';
import { codeOf, type StoreHarness } from './harness.js';

/** Two clusters on one backend never see each other. */
export function isolationCases(h: StoreHarness): void {
  const { store, open, eventTimeoutMs } = h;

  it('two clusters on one backend never see each other', async () => {
    const otherCluster = uniqueCluster('other');
    const other = await open(otherCluster);
    const otherList = await other.list('');
    const otherWatch = collectWatch(other, '', otherList.revision);
    const mine = await store().create('election/e', leaseRecord('mine'));
    expect(await other.get('election/e')).toBeUndefined();
    expect(codeOf(await rejection(other.update('election/e', leaseRecord('x'), mine.version)))).toBe('NOT_FOUND');
    const theirs = await other.create('election/e', leaseRecord('theirs'));
    expect((await store().get('election/e'))?.record.holderIdentity).toBe('mine');
    expect((await store().list('')).records.map((r) => r.record.holderIdentity)).toEqual(['mine']);
    expect((await other.list('')).records.map((r) => r.record.holderIdentity)).toEqual(['theirs']);
    await other.create('lock/end', leaseRecord('end'));
    const seen = await otherWatch.until((e) => e.type === 'put' && e.record.key === 'lock/end', eventTimeoutMs);
    otherWatch.close();
    expect(seen.map(describeEvent)).toEqual(['put election/e theirs', 'put lock/end end']);
    expect(theirs.record.holderIdentity).toBe('theirs');
  });
}
