import { createRegistry } from '@rollcall/core';
import { MemoryStore, sharedMemoryBackend } from '@rollcall/core/testing';
import { registryConformance, storeConformance } from '../src/index.js';

/**
 * The memory store again, declaring no capabilities: what a minimal backend
 * gets. Every case that needs a capability must show up as skipped with its
 * reason in the title, and everything else must still run and pass.
 */
const BACKEND = 'conformance-minimal';
const backend = sharedMemoryBackend(BACKEND);

storeConformance({
  name: 'memory (no capabilities)',
  openStore: async (cluster) => new MemoryStore({ backend, cluster }),
});

registryConformance({
  name: 'memory (no capabilities)',
  createRegistry: (config) => createRegistry({ ...config, type: 'memory', memory: { name: BACKEND } }),
});

// The pod liveness mode without the pods capability: one case, skipped, saying why.
registryConformance({
  name: 'memory (pod liveness, no pods capability)',
  liveness: 'pod',
  createRegistry: (config) => createRegistry({ ...config, type: 'memory', memory: { name: BACKEND } }),
});
