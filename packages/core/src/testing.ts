/**
 * `@rollcall/core/testing`: a clock that moves only when told, and the memory
 * store with a client that can be cut off (`partition()` / `heal()`) and a
 * history that can be compacted — for tests of applications and of Rollcall;
 * and a seeded generator for model tests over random event sequences.
 * Open a registry on such a store with `createRegistry(config, { store, clock })`.
 */
export { ManualClock, settle } from './manual-clock.js';
export { MemoryBackend, sharedMemoryBackend, type MemoryBackendOptions } from './memory/memory-backend.js';
export { MemoryStore, type MemoryStoreOptions } from './memory/memory-store.js';
export { seeded } from './seeded.js';
