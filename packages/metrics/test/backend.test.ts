import { afterEach, describe, expect, it } from 'vitest';
import { registryStore } from '@rollcall/core/admin';
import { MetricsHarness } from './harness.js';

let h: MetricsHarness;
afterEach(async () => h?.closeAll());

describe('backend request and watch metrics', () => {
  it('requests by operation and outcome, their latency in a histogram by the registry clock; watches are counted, not timed', async () => {
    h = new MetricsHarness();
    const { registry } = await h.watched('app', {}, { requestTimeoutMs: 1000 });
    const member = await registry.announce({ role: 'worker', id: 'w1' });
    expect(await h.value('rollcall_backend_requests_total', { operation: 'create', code: 'OK' })).toBe(1);
    expect(await h.value('rollcall_backend_request_duration_seconds_count', { operation: 'create', code: 'OK' })).toBe(1);
    expect(await h.value('rollcall_backend_request_duration_seconds_bucket', { operation: 'create', code: 'OK', le: '0.001' })).toBe(1);

    // Someone else's write in between: the heartbeat's compare-and-set is refused with CONFLICT.
    const raw = registryStore(registry);
    const current = (await raw.get('member/worker/w1'))!;
    await raw.update('member/worker/w1', current.record, current.version);
    await member.update({ load: 1 });
    expect(await h.value('rollcall_backend_requests_total', { operation: 'update', code: 'CONFLICT' })).toBe(1);
    expect(await h.value('rollcall_backend_requests_total', { operation: 'update', code: 'OK' })).toBe(1);
    expect(await h.value('rollcall_backend_requests_total', { operation: 'get', code: 'OK' })).toBe(1);
    expect(await h.value('rollcall_backend_request_duration_seconds_count', { operation: 'watch', code: 'OK' })).toBeUndefined();
  });

  it('a call that times out is UNAVAILABLE in the bucket of the request timeout', async () => {
    h = new MetricsHarness();
    const { registry, store } = await h.watched('app', {}, { requestTimeoutMs: 1000 });
    // A create whose answer never comes.
    store.create = () => new Promise(() => {});
    const announce = registry.announce({ role: 'worker', id: 'w1' }).catch((e: unknown) => e);
    await h.clock.advance(1000);
    expect(await announce).toMatchObject({ code: 'UNAVAILABLE' });
    const samples = await h.scrape();
    const timedOut = samples.filter((s) => s.name === 'rollcall_backend_request_duration_seconds_bucket' && s.labels.operation === 'create' && s.labels.code === 'UNAVAILABLE');
    expect(timedOut.map((b) => [b.labels.le, b.value])).toEqual(['0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf'].map((le) => [le, le === '+Inf' || Number(le) >= 1 ? 1 : 0]));
    expect(await h.value('rollcall_backend_requests_total', { operation: 'create', code: 'UNAVAILABLE' })).toBe(1);
  });

  it('watch events by type, restarts by the code that broke the watch, and a relist after REVISION_TOO_OLD', async () => {
    h = new MetricsHarness();
    const peer = await h.registry('peer');
    const { store } = await h.watched('app', {}, {}, ['worker']);
    await peer.registry.announce({ role: 'worker', id: 'w1' });
    await h.clock.advance(0);
    expect(await h.value('rollcall_watch_events_total', { type: 'put' })).toBe(1);
    expect(await h.value('rollcall_watch_relists_total')).toBe(0);

    store.partition();
    await h.clock.advance(0);
    expect(await h.value('rollcall_watch_restarts_total', { code: 'UNAVAILABLE' })).toBe(1);
    await peer.registry.announce({ role: 'worker', id: 'w2' });
    h.backend.compact(); // the app's revision is gone: it must relist
    store.heal();
    await h.clock.advance(5_000);
    expect(await h.value('rollcall_watch_restarts_total', { code: 'REVISION_TOO_OLD' })).toBe(1);
    expect(await h.value('rollcall_watch_relists_total')).toBe(1);
    expect(await h.value('rollcall_members', { role: 'worker' })).toBe(2);
    expect(await h.value('rollcall_backend_requests_total', { operation: 'list', code: 'OK' })).toBeGreaterThanOrEqual(1);
    expect(await h.value('rollcall_watch_events_total', { type: 'progress' })).toBeGreaterThanOrEqual(1);
  });
});
