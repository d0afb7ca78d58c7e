import { afterEach, describe, expect, it } from 'vitest';
import { METRIC_NAMES, METRICS, registerRollcallMetrics } from '../src/index.js';
import { MetricsHarness } from './harness.js';

let h: MetricsHarness;
afterEach(async () => h?.closeAll());

describe('registering and unregistering', () => {
  it('every metric of the catalog is on the prom-client Registry, with its type and help', async () => {
    h = new MetricsHarness();
    await h.watched('app');
    const text = await h.prom.metrics();
    for (const m of Object.values(METRICS)) {
      expect(text).toContain(`# HELP ${m.name} ${m.help}`);
      expect(text).toContain(`# TYPE ${m.name} ${m.type}`);
    }
    expect(h.prom.getMetricsAsArray().map((m) => m.name).sort()).toEqual([...METRIC_NAMES].sort());
  });

  it('names follow Prometheus conventions: rollcall_ prefix, _total counters, _seconds durations, no unit-less duration', () => {
    for (const m of Object.values(METRICS)) {
      expect(m.name).toMatch(/^rollcall_[a-z_]+$/);
      expect(m.name.endsWith('_total')).toBe(m.type === 'counter');
      if (m.type === 'histogram') expect(m.name).toMatch(/_seconds$/);
    }
  });

  it('close() removes them; closing the Rollcall registry does it by itself, and another registry may then register', async () => {
    h = new MetricsHarness();
    const { metrics } = await h.watched('app');
    metrics.close();
    metrics.close();
    expect(h.prom.getMetricsAsArray()).toEqual([]);

    const { registry } = await h.watched('second');
    expect(h.prom.getMetricsAsArray()).toHaveLength(METRIC_NAMES.length);
    await registry.close();
    expect(h.prom.getMetricsAsArray()).toEqual([]);
    await h.watched('third');
    expect(await h.value('rollcall_connection_state', { state: 'connected' })).toBe(1);
  });

  it('a second Rollcall registry on the same prom-client Registry is refused with INVALID_ARGUMENT, and the first keeps its metrics', async () => {
    h = new MetricsHarness();
    await h.watched('app', {}, {}, ['worker']);
    const { registry: other } = await h.registry('other');
    expect(() => registerRollcallMetrics(other, h.prom)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('rollcall_registry_info is registered on this prom-client Registry already') }));
    expect(h.prom.getMetricsAsArray()).toHaveLength(METRIC_NAMES.length);
    await other.announce({ role: 'worker', id: 'w1' });
    await h.clock.advance(0);
    expect(await h.value('rollcall_members', { role: 'worker' })).toBe(1);
  });

  it('a closed Rollcall registry is refused with CLOSED, and nothing is left registered', async () => {
    h = new MetricsHarness();
    const { registry } = await h.registry('app');
    await registry.close();
    expect(() => registerRollcallMetrics(registry, h.prom)).toThrow(expect.objectContaining({ code: 'CLOSED' }));
    expect(h.prom.getMetricsAsArray()).toEqual([]);
  });

  it('refuses what is not a prom-client Registry', async () => {
    h = new MetricsHarness();
    const { registry } = await h.registry('app');
    expect(() => registerRollcallMetrics(registry, {} as never)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
