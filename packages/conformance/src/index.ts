export { storeConformance, type StoreConformanceOptions } from './store-conformance.js';
export { registryConformance, type RegistryConformanceOptions } from './registry-conformance.js';
export { skipReason, type ConformanceConfig, type CrashChildTarget, type RegistryCapabilities, type StoreCapabilities } from './capabilities.js';
export { DEFAULT_CONFORMANCE_TIMINGS, resolveTimings, type ConformanceTimings } from './timings.js';
export { nextEvent, observeFor, rejection, StopWaiting, waitFor, whenAborted, WaitTimeoutError, type Rejection, type Subscribable, type WaitForOptions } from './wait-for.js';
export { collectWatch, describeEvent, type ChangeEvent, type CollectedWatch } from './collect-watch.js';
export { uniqueCluster } from './names.js';
export { parsePrometheusText, sampleValue, scrapeMetrics, scrapeUntil, type MetricSample } from './prometheus-text.js';
export { leaseRecord } from './records.js';
