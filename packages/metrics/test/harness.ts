import { createRegistry, type Registry, type RegistryConfigInput } from '@rollcall/core';
import { ManualClock, MemoryBackend, MemoryStore } from '@rollcall/core/testing';
import { parsePrometheusText, sampleValue, type MetricSample } from '@rollcall/tools/test-kit';
import { Registry as PromRegistry } from 'prom-client';
import { registerRollcallMetrics, type RollcallMetrics, type RollcallMetricsOptions } from '../src/index.js';

/** Registries on one memory backend and one manual clock; `watched` has metrics on its own prom-client Registry. */
export class MetricsHarness {
  readonly clock = new ManualClock();
  readonly backend = new MemoryBackend();
  readonly prom = new PromRegistry();
  private readonly opened: Registry[] = [];

  async registry(identity: string, config: Omit<RegistryConfigInput, 'type'> = {}): Promise<{ registry: Registry; store: MemoryStore }> {
    const store = new MemoryStore({ backend: this.backend, cluster: 'test' });
    const registry = await createRegistry({ type: 'memory', cluster: 'test', identity, ...config }, { store, clock: this.clock });
    this.opened.push(registry);
    return { registry, store };
  }

  /** A registry with metrics registered on `prom`. */
  async watched(identity: string, options: RollcallMetricsOptions = {}, config: Omit<RegistryConfigInput, 'type'> = {}, reads: readonly string[] = []): Promise<{ registry: Registry; store: MemoryStore; metrics: RollcallMetrics }> {
    const opened = await this.registry(identity, config);
    // The roles the application reads before its metrics are registered.
    for (const role of reads) await opened.registry.members(role);
    return { ...opened, metrics: registerRollcallMetrics(opened.registry, this.prom, options) };
  }

  /** What a scrape of `prom` returns now, parsed from the text format. */
  async scrape(): Promise<MetricSample[]> {
    return parsePrometheusText(await this.prom.metrics());
  }

  /** One sample's value in a scrape now. */
  async value(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
    return sampleValue(await this.scrape(), name, labels);
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.opened.map((r) => r.close()));
  }
}
