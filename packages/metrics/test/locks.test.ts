import { afterEach, describe, expect, it } from 'vitest';
import { MetricsHarness } from './harness.js';

let h: MetricsHarness;
afterEach(async () => h?.closeAll());

describe('lock metrics', () => {
  it('held with its fencing token while held; acquired and lost counted, with the reason', async () => {
    h = new MetricsHarness();
    const { registry, store } = await h.watched('app');
    const first = await registry.lock('nightly');
    expect(await h.value('rollcall_lock_held', { lock: 'nightly' })).toBe(1);
    expect(await h.value('rollcall_lock_fencing_token', { lock: 'nightly' })).toBe(first.fencingToken);
    expect(await h.value('rollcall_lock_changes_total', { lock: 'nightly', event: 'acquired' })).toBe(1);
    await first.release();
    expect(await h.value('rollcall_lock_held', { lock: 'nightly' })).toBe(0);
    expect(await h.value('rollcall_lock_changes_total', { lock: 'nightly', event: 'lost', reason: 'released' })).toBe(1);

    const second = (await registry.tryLock('nightly'))!;
    expect(await h.value('rollcall_lock_fencing_token', { lock: 'nightly' })).toBe(second.fencingToken);
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    store.partition();
    await h.clock.advance(10_000); // the default renew deadline
    expect(second.signal.aborted).toBe(true);
    expect(await h.value('rollcall_lock_held', { lock: 'nightly' })).toBe(0);
    expect(await h.value('rollcall_lock_changes_total', { lock: 'nightly', event: 'lost', reason: 'renew-deadline' })).toBe(1);
  });

  it('lockLabel maps unbounded lock names onto a bounded label', async () => {
    h = new MetricsHarness();
    const { registry } = await h.watched('app', { lockLabel: (name) => name.replace(/-\d+$/, '') });
    const a = await registry.lock('job-17');
    const b = await registry.lock('job-18');
    expect(await h.value('rollcall_lock_held', { lock: 'job' })).toBe(2);
    expect(await h.value('rollcall_lock_fencing_token', { lock: 'job' })).toBe(b.fencingToken);
    expect((await h.scrape()).some((s) => s.labels.lock === 'job-17')).toBe(false);
    await a.release();
    expect(await h.value('rollcall_lock_held', { lock: 'job' })).toBe(1);
  });
});
