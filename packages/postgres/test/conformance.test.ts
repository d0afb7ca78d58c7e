import { afterAll } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
import { registryConformance, storeConformance } from '@rollcall/conformance';
import { ClientProxies, restartServer } from '@rollcall/tools/testenv';
import type { SqlRecordStore } from '@rollcall/sql';
import { createPostgresStore } from '../src/index.js';
import { postgres, testOptions, testSchema } from './support/postgres.js';

const schema = testSchema('conformance');
// Each store and registry reaches PostgreSQL through a proxy of its own, so one can be cut off alone.
const proxies = new ClientProxies(postgres(), 'reset');
afterAll(() => proxies.close());

const postgresSection = (overrides: { host?: string; port?: number } = {}) => {
  const { tls: _tls, ...section } = testOptions(schema.name, overrides);
  return section;
};

let compactor: SqlRecordStore | undefined;
const compact = async () => {
  compactor ??= await createPostgresStore({ cluster: 'compactor', ...testOptions(schema.name), requestTimeoutMs: 5000 });
  await compactor.database.purgeChanges({ all: true });
};
afterAll(async () => compactor?.close());

/** A row's value overwritten past the store; false when the server refuses the text (a JSON column, a NUL byte). */
const overwriteRaw = async (cluster: string, key: string, text: string): Promise<boolean> =>
  schema.exec('UPDATE rollcall_records SET record_value = ? WHERE cluster_name = ? AND record_key = ?', [text, cluster, key]).then(
    () => true,
    () => false,
  );

storeConformance({
  name: 'postgres',
  openStore: (cluster) => proxies.open((proxy) => createPostgresStore({ cluster, ...testOptions(schema.name, { host: '127.0.0.1', port: proxy.port }), requestTimeoutMs: 2000 })),
  capabilities: {
    compact,
    partition: (store) => proxies.cut(store),
    heal: (store) => proxies.heal(store),
    overwriteRaw,
  },
});

// changeFeed poll (a server behind a transaction-pooling proxy): the store contract, watches included, without LISTEN.
storeConformance({
  name: 'postgres (changeFeed poll)',
  openStore: (cluster) =>
    proxies.open((proxy) =>
      createPostgresStore({ cluster, ...testOptions(schema.name, { host: '127.0.0.1', port: proxy.port, changeFeed: 'poll', pollIntervalMs: 100 }), requestTimeoutMs: 2000 }),
    ),
  capabilities: {
    compact,
    partition: (store) => proxies.cut(store),
    heal: (store) => proxies.heal(store),
    overwriteRaw,
  },
});

// Once with heartbeats on the member rows, once with one elected reaper per role reading heartbeat rows
// (registry.member.liveness=reaper): the contract holds either way.
for (const [NAME, liveness] of [
  ['postgres', undefined],
  ['postgres (reaper liveness)', 'reaper'],
] as const) {
  registryConformance({
    name: NAME,
    liveness,
    createRegistry: (config): Promise<Registry> => proxies.open((proxy) => createRegistry({ ...config, type: 'postgres', postgres: postgresSection({ host: '127.0.0.1', port: proxy.port }) })),
    capabilities: {
      partition: {
        partition: (registry) => proxies.cut(registry),
        heal: (registry) => proxies.heal(registry),
      },
      // The child connects on its own, straight to PostgreSQL.
      crashChild: { kind: 'config', config: (config) => ({ ...config, type: 'postgres', postgres: postgresSection() }) },
      compact,
      restartServer: () => restartServer('postgres'),
    },
  });
}
