import { InvalidArgumentError } from '@rollcall/core';
import { Counter, Gauge, Histogram, type Registry as PromRegistry } from 'prom-client';
import { METRICS, type MetricSpec } from './catalog.js';

type LabelOf<S extends MetricSpec> = S['labels'][number];

/** The prom-client object of each metric in a catalog, by the same key. */
export type InstrumentsOf<C extends Record<string, MetricSpec>> = {
  [K in keyof C]: C[K]['type'] extends 'gauge' ? Gauge<LabelOf<C[K]>> : C[K]['type'] extends 'counter' ? Counter<LabelOf<C[K]>> : Histogram<LabelOf<C[K]>>;
};

/** A registry's metrics (the catalog's `METRICS`). */
export type Instruments = InstrumentsOf<typeof METRICS>;

/**
 * Creates every metric of `catalog` on `promRegistry`, each histogram with
 * `bucketsSeconds` (one list for all, or one per metric key). Refuses, before
 * creating any, when one of the names is registered there already (a second
 * Rollcall registry, or pod runner, in the process wants a prom registry of its own).
 */
export function createInstruments<C extends Record<string, MetricSpec>>(promRegistry: PromRegistry, catalog: C, bucketsSeconds: readonly number[] | Partial<Record<keyof C, readonly number[]>>): InstrumentsOf<C> {
  const taken = Object.values(catalog).find((m) => promRegistry.getSingleMetric(m.name));
  if (taken) {
    throw new InvalidArgumentError(`${taken.name} is registered on this prom-client Registry already: register each Rollcall registry and each pod runner on a prom-client Registry of its own`);
  }
  const made: Record<string, Gauge | Counter | Histogram> = {};
  for (const [key, m] of Object.entries(catalog)) {
    const common = { name: m.name, help: m.help, labelNames: m.labels, registers: [promRegistry] };
    made[key] = m.type === 'gauge' ? new Gauge(common) : m.type === 'counter' ? new Counter(common) : new Histogram({ ...common, buckets: [...((Array.isArray(bucketsSeconds) ? bucketsSeconds : (bucketsSeconds as Record<string, readonly number[]>)[key]) ?? [])] });
  }
  return made as InstrumentsOf<C>;
}

/** Removes every metric of `catalog` from `promRegistry`. */
export function removeInstruments<C extends Record<string, MetricSpec>>(promRegistry: PromRegistry, catalog: C, instruments: InstrumentsOf<C>): void {
  for (const [key, m] of Object.entries(catalog)) {
    // Only ours: a metric of that name registered by someone else after close stays.
    if (promRegistry.getSingleMetric(m.name) === (instruments as Record<string, unknown>)[key]) promRegistry.removeSingleMetric(m.name);
  }
}
