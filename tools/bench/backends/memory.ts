import { registryPlugin, silentLogger, systemClock } from '@rollcall/core';
import type { BenchBackend } from '../target.js';
import { benchCluster } from '../timing.js';

/** The in-process store: every registry of the run shares one named memory backend. */
export const memoryBackend: BenchBackend = {
  name: 'memory',
  servers: [],
  async prepare() {
    const name = benchCluster('memory');
    return {
      backendConfig: () => ({ type: 'memory', memory: { name } }),
      // the child cannot reach this process's memory: it gets the store over IPC
      crashChild: { kind: 'ipc-store', openStore: (cluster) => registryPlugin.connect({ cluster, options: { name }, logger: silentLogger, clock: systemClock, requestTimeoutMs: 5000 }) },
      idle: { na: 'in-process store, no server' },
      close: async () => {},
    };
  },
};
