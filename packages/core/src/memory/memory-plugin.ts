import type { RegistryPlugin } from '../plugin.js';
import { sharedMemoryBackend } from './memory-backend.js';
import { MemoryStore } from './memory-store.js';

/** `registry.memory.*` keys. */
export interface MemoryPluginOptions {
  /** Registries of one process that name the same backend share its records. Default `default`. */
  readonly name: string;
}

/** `registry.type=memory`: records in this process only, for tests and single-process use. */
export const memoryPlugin: RegistryPlugin<MemoryPluginOptions> = {
  type: 'memory',
  options: {
    name: { type: 'string', default: 'default', doc: 'Name of the in-process backend; registries naming the same one share records.' },
  },
  sameLocation: (a, b) => a.name === b.name,
  async connect({ cluster, options }) {
    return new MemoryStore({ backend: sharedMemoryBackend(options.name), cluster });
  },
};
