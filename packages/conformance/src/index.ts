/**
 * `@rollcall/conformance`: the suites a backend runs (`storeConformance`,
 * `registryConformance`), their options and capabilities, and the helpers a
 * backend's own tests use beside them. The crash client and the IPC store that
 * run a registry in a child process are the suite's own, not on this entry (the
 * benchmark reaches the client at `@rollcall/conformance/crash`); the harness
 * they run on is `@rollcall/child-harness`, whose timeout error the waits share.
 */
export { storeConformance, type StoreConformanceOptions } from './store-conformance.js';
export { registryConformance, type RegistryConformanceOptions } from './registry-conformance.js';
export { skipReason, type ConformanceConfig, type ConformancePod, type CrashChildTarget, type PodCapability, type RegistryCapabilities, type StoreCapabilities } from './capabilities.js';
export { DEFAULT_CONFORMANCE_TIMINGS, resolveTimings, type ConformanceTimings } from './timings.js';
export { nextEvent, observeFor, rejection, StopWaiting, waitFor, whenAborted, type Rejection, type Subscribable, type WaitForOptions } from './wait-for.js';
export { WaitTimeoutError } from '@rollcall/child-harness';
export { collectWatch, describeEvent, type ChangeEvent, type CollectedWatch } from './collect-watch.js';
export { uniqueCluster } from './names.js';
export { leaseRecord } from './records.js';
