import { join } from 'node:path';
import { createRegistry, type Registry } from '@rollcall/core';
import { registryConformance, storeConformance } from '@rollcall/conformance';
import { createSqliteStore, type SqliteStore } from '../src/index.js';
import { rawConnection, tempDir } from './support/sqlite.js';

// One file for the run; every case has its own cluster in it. The crash child opens the same file from its own process.
const path = join(tempDir(), 'conformance.db');
const compact = async (store: SqliteStore) => void (await store.database.purgeChanges({ all: true }));
let any: SqliteStore | undefined;
const anyStore = async () => (any ??= await createSqliteStore({ cluster: 'compactor', path, requestTimeoutMs: 5000 }));

storeConformance({
  name: 'sqlite',
  openStore: async (cluster) => createSqliteStore({ cluster, path, requestTimeoutMs: 2000 }),
  capabilities: {
    compact: async () => compact(await anyStore()),
    // No partition: a local file has no connection to cut.
    overwriteRaw: async (cluster, key, text) => {
      const raw = rawConnection(path);
      try {
        await raw.exec('UPDATE rollcall_records SET record_value = ? WHERE cluster_name = ? AND record_key = ?', [text, cluster, key]);
      } finally {
        raw.close();
      }
      return true;
    },
  },
});

// Once with heartbeats on the member rows, once with one elected reaper per role reading heartbeat rows
// (registry.member.liveness=reaper): the contract holds either way.
for (const [NAME, liveness] of [
  ['sqlite', undefined],
  ['sqlite (reaper liveness)', 'reaper'],
] as const) {
  registryConformance({
    name: NAME,
    liveness,
    createRegistry: (config): Promise<Registry> => createRegistry({ ...config, type: 'sqlite', sqlite: { path } }),
    capabilities: {
      crashChild: { kind: 'config', config: (config) => ({ ...config, type: 'sqlite', sqlite: { path } }) },
      compact: async () => compact(await anyStore()),
      // No partition and no server restart: there is no server or network between a process and its file.
    },
  });
}

