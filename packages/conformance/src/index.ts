export { storeConformance, type StoreConformanceOptions } from './store-conformance.js';
export { registryConformance, type RegistryConformanceOptions } from './registry-conformance.js';
export { skipReason, type ConformanceConfig, type CrashChildTarget, type RegistryCapabilities, type StoreCapabilities } from './capabilities.js';
export { DEFAULT_CONFORMANCE_TIMINGS, resolveTimings, type ConformanceTimings } from './timings.js';
export { nextEvent, observeFor, rejection, waitFor, whenAborted, WaitTimeoutError, type Subscribable } from './wait-for.js';
export { IpcRecordStore, serveStore, type IpcChannel, type IpcStoreDescription } from './ipc-store.js';
export { CrashClient, crashChildEntry } from './crash-client.js';
export type { ChildCommand, ChildEvent } from './child/protocol.js';
