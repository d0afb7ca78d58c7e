import { InvalidArgumentError } from '@rollcall/core';
import { Counter, Gauge, Histogram, type Registry as PromRegistry } from 'prom-client';
import { METRICS, type MetricSpec } from './catalog.js';

type Specs = typeof METRICS;
type LabelOf<S extends MetricSpec> = S['labels'][number];

/** The prom-client object of each metric in the catalog, by the same key. */
export type Instruments = {
  [K in keyof Specs]: Specs[K]['type'] extends 'gauge' ? Gauge<LabelOf<Specs[K]>> : Specs[K]['type'] extends 'counter' ? Counter<LabelOf<Specs[K]>> : Histogram<LabelOf<Specs[K]>>;
};

/**
 * Creates every metric of the catalog on `promRegistry`. Refuses, before
 * creating any, when one of the names is registered there already (a second
 * Rollcall registry in the process wants a prom registry of its own).
 */
export function createInstruments(promRegistry: PromRegistry, bucketsSeconds: readonly number[]): Instruments {
  const taken = Object.values(METRICS).find((m) => promRegistry.getSingleMetric(m.name));
  if (taken) {
    throw new InvalidArgumentError(`${taken.name} is registered on this prom-client Registry already: register each Rollcall registry on a prom-client Registry of its own`);
  }
  const made: Record<string, Gauge | Counter | Histogram> = {};
  for (const [key, m] of Object.entries(METRICS) as [string, MetricSpec][]) {
    const common = { name: m.name, help: m.help, labelNames: m.labels, registers: [promRegistry] };
    made[key] = m.type === 'gauge' ? new Gauge(common) : m.type === 'counter' ? new Counter(common) : new Histogram({ ...common, buckets: [...bucketsSeconds] });
  }
  return made as Instruments;
}

/** Removes every metric of the catalog from `promRegistry`. */
export function removeInstruments(promRegistry: PromRegistry, instruments: Instruments): void {
  for (const [key, m] of Object.entries(METRICS)) {
    // Only ours: a metric of that name registered by someone else after close stays.
    if (promRegistry.getSingleMetric(m.name) === (instruments as Record<string, unknown>)[key]) promRegistry.removeSingleMetric(m.name);
  }
}
