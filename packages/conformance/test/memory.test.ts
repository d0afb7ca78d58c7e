import { createRegistry, MemoryStore, sharedMemoryBackend, type Registry } from '@rollcall/core';
import { registryConformance, storeConformance } from '../src/index.js';

// One named in-process backend for the whole file; every case uses its own cluster on it.
const BACKEND = 'conformance';
const backend = sharedMemoryBackend(BACKEND);
const memoryStoreOf = (registry: Registry) => registry.recordStore as MemoryStore;

storeConformance({
  name: 'memory',
  openStore: async (cluster) => new MemoryStore({ backend, cluster }),
  capabilities: {
    compact: () => backend.compact(),
    partition: (store) => (store as MemoryStore).partition(),
    heal: (store) => (store as MemoryStore).heal(),
  },
});

registryConformance({
  name: 'memory',
  createRegistry: (config) => createRegistry({ ...config, type: 'memory', memory: { name: BACKEND } }),
  capabilities: {
    partition: {
      partition: (registry) => memoryStoreOf(registry).partition(),
      heal: (registry) => memoryStoreOf(registry).heal(),
    },
    // The memory store cannot be shared across processes: the suite serves it to the child over IPC.
    crashChild: { kind: 'ipc-store', openStore: (cluster) => new MemoryStore({ backend, cluster }) },
    compact: () => backend.compact(),
    // No restartServer: the memory store has no server to restart, so that case is reported as skipped.
  },
});
