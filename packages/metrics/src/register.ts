import { InvalidArgumentError, type Registry } from '@rollcall/core';
import type { Registry as PromRegistry } from 'prom-client';
import { trackBackend } from './backend.js';
import { METRICS } from './catalog.js';
import { trackConnection } from './connection.js';
import { trackElections } from './elections.js';
import { trackFailovers } from './failovers.js';
import { createInstruments, removeInstruments } from './instruments.js';
import { trackLocks } from './locks.js';
import { trackMembers } from './members.js';
import { DEFAULT_REQUEST_BUCKETS_SECONDS, type RollcallMetricsOptions } from './options.js';

/** What `registerRollcallMetrics` returns. */
export interface RollcallMetrics {
  /** Stops deriving metrics and removes them from the prom-client Registry. Idempotent; done by itself when the Rollcall registry closes. */
  close(): void;
}

/**
 * Registers Rollcall's metrics (see `METRICS`) on `promRegistry` and keeps
 * them up to date from `registry`'s events and backend activity, until
 * `close()` or until the registry closes. Call it right after
 * `createRegistry`, before campaigning or locking: what happened before is
 * not replayed (members present are counted).
 *
 * @example
 * const promRegistry = new client.Registry();
 * registerRollcallMetrics(registry, promRegistry, { roles: ['worker'] });
 */
export function registerRollcallMetrics(registry: Registry, promRegistry: PromRegistry, options: RollcallMetricsOptions = {}): RollcallMetrics {
  if (typeof promRegistry?.getSingleMetric !== 'function') throw new InvalidArgumentError('registerRollcallMetrics() takes a prom-client Registry as its second argument');
  const instruments = createInstruments(promRegistry, METRICS, options.requestDurationBuckets ?? DEFAULT_REQUEST_BUCKETS_SECONDS);
  const stops: (() => void)[] = [];
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    stops.forEach((stop) => stop());
    removeInstruments(promRegistry, METRICS, instruments);
  };
  try {
    stops.push(trackBackend(registry, instruments, close));
    stops.push(trackConnection(registry, instruments));
    stops.push(trackMembers(registry, instruments, options.roles));
    stops.push(trackElections(registry, instruments, options.elections ?? [], options.maxObservedElections ?? 1000));
    stops.push(trackLocks(registry, instruments, options.lockLabel ?? ((name) => name)));
    stops.push(trackFailovers(registry, instruments));
  } catch (err) {
    close();
    throw err;
  }
  return { close };
}
