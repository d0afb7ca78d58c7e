import { createRegistry, type Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { MemoryStore, sharedMemoryBackend } from '@rollcall/core/testing';
import type { RegistryConformanceOptions } from '../src/index.js';

// One named in-process backend per test file; every case uses its own cluster on it.
const BACKEND = 'conformance';
export const backend = sharedMemoryBackend(BACKEND);
const memoryStoreOf = (registry: Registry) => registryStore(registry) as MemoryStore;

// Every store a registry of this file connected, so a "server restart" can cut them all off at once.
const connected = new Set<MemoryStore>();

/**
 * The memory backend's stand-in for a server restart: every client is cut off
 * for `downMs`, the change history is dropped (so resuming watches must
 * relist), and the records survive, as on a server with a data directory.
 */
async function restartMemoryServer(downMs = 500): Promise<void> {
  const stores = [...connected];
  stores.forEach((s) => s.partition());
  backend.compact();
  await new Promise((resolve) => setTimeout(resolve, downMs)); // the outage itself, not a synchronisation
  stores.forEach((s) => s.heal());
}

/** The registry suite's factory and capabilities on the memory backend. */
export const memoryRegistry: Pick<RegistryConformanceOptions, 'createRegistry' | 'capabilities'> = {
  createRegistry: async (config) => {
    const registry = await createRegistry({ ...config, type: 'memory', memory: { name: BACKEND } });
    connected.add(memoryStoreOf(registry));
    return registry;
  },
  capabilities: {
    partition: {
      partition: (registry) => memoryStoreOf(registry).partition(),
      heal: (registry) => memoryStoreOf(registry).heal(),
    },
    // The memory store cannot be shared across processes: the suite serves it to the child over IPC.
    crashChild: { kind: 'ipc-store', openStore: (cluster) => new MemoryStore({ backend, cluster }) },
    compact: () => backend.compact(),
    restartServer: () => restartMemoryServer(),
  },
};
