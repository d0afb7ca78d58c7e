import { restartServer, startServer, stopServer } from '@rollcall/tools/testenv';
import { sqlServerConformance } from '@rollcall/conformance/sql';
import { createPostgresStore } from '../src/index.js';
import { testOptions, testSchema } from './support/postgres.js';

const schema = testSchema('faults');

// Here the server's idle_in_transaction_session_timeout ends a silent writer's transaction.
sqlServerConformance({
  name: 'postgres',
  server: 'PostgreSQL',
  openStore: (cluster, options, requestTimeoutMs) => createPostgresStore({ cluster, ...testOptions(schema.name, options), requestTimeoutMs }),
  registryConfig: (options) => {
    const { tls: _tls, ...postgres } = testOptions(schema.name, options);
    return { type: 'postgres', postgres };
  },
  stopServer: () => stopServer('postgres'),
  startServer: () => startServer('postgres'),
  restartServer: () => restartServer('postgres'),
});
