import { MemoryStore } from '@rollcall/core/testing';
import { registryConformance, storeConformance } from '../src/index.js';
import { backend, memoryRegistry } from './memory-backend.js';

storeConformance({
  name: 'memory',
  openStore: async (cluster) => new MemoryStore({ backend, cluster }),
  capabilities: {
    compact: () => backend.compact(),
    partition: (store) => (store as MemoryStore).partition(),
    heal: (store) => (store as MemoryStore).heal(),
  },
});

registryConformance({ name: 'memory', ...memoryRegistry });
