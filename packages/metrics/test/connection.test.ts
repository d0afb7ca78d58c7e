import { afterEach, describe, expect, it } from 'vitest';
import { MetricsHarness } from './harness.js';

let h: MetricsHarness;
afterEach(async () => h?.closeAll());

const state = async () => Object.fromEntries(await Promise.all(['connected', 'suspended', 'lost'].map(async (s) => [s, await h.value('rollcall_connection_state', { state: s })])));

describe('connection metrics', () => {
  it('the state now as one 1 among three, and each change counted: suspended, lost, reconnected', async () => {
    h = new MetricsHarness();
    const { registry, store } = await h.watched('app', {}, {}, ['worker']);
    expect(await h.value('rollcall_registry_info', { backend: 'memory', cluster: 'test' })).toBe(1);
    expect(await state()).toEqual({ connected: 1, suspended: 0, lost: 0 });

    store.partition(); // the watch breaks: the backend does not answer
    await h.clock.advance(0);
    expect(registry.state).toBe('suspended');
    expect(await state()).toEqual({ connected: 0, suspended: 1, lost: 0 });
    await h.clock.advance(20_000); // the longest default lease
    expect(await state()).toEqual({ connected: 0, suspended: 0, lost: 1 });

    store.heal();
    await h.clock.advance(2_000); // the next probe
    expect(await state()).toEqual({ connected: 1, suspended: 0, lost: 0 });
    expect(await h.value('rollcall_connection_changes_total', { state: 'suspended' })).toBe(1);
    expect(await h.value('rollcall_connection_changes_total', { state: 'lost' })).toBe(1);
    expect(await h.value('rollcall_connection_changes_total', { state: 'reconnected' })).toBe(1);
  });
});
