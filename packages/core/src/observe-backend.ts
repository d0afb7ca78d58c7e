import { boundBackendActivity, type BackendActivityListener } from './backend-activity.js';
import { InvalidArgumentError } from './errors.js';
import type { Registry } from './registry.js';

/**
 * Calls `listener` with every backend call `registry` makes from now on, every
 * watch event and watch break, and finally `closed` when the registry closes.
 * Returns the unsubscribe function; throws CLOSED on a closed registry. A
 * function beside the Registry API, not a part of it: for instrumentation such
 * as `@rollcall/metrics`.
 *
 * @example
 * const off = observeBackend(registry, (a) => a.type === 'request' && a.code && console.warn(a.operation, a.code));
 */
export function observeBackend(registry: Registry, listener: BackendActivityListener): () => void {
  const reporter = boundBackendActivity(registry);
  if (!reporter) throw new InvalidArgumentError('observeBackend() takes a registry made by createRegistry()');
  if (typeof listener !== 'function') throw new InvalidArgumentError('observeBackend() needs a listener function');
  return reporter.add(listener);
}
