import { sqlDesignConformance } from '@rollcall/conformance/sql';
import { createPostgresStore } from '../src/index.js';
import { postgres, testOptions, testSchema } from './support/postgres.js';

const schema = testSchema('design');

sqlDesignConformance({
  name: 'postgres',
  openStore: (cluster, options) => createPostgresStore({ cluster, ...testOptions(schema.name, options), requestTimeoutMs: 5000 }),
  registryConfig: (cluster, options) => {
    const { tls: _tls, ...rest } = testOptions(schema.name, options);
    return { type: 'postgres', cluster, postgres: rest };
  },
  exec: (sql, params) => schema.exec(sql, params),
  readOnlyUserConfig: (cluster, options) => {
    const { tls: _tls, ...rest } = testOptions(schema.name, options);
    const { readOnly } = postgres();
    return { type: 'postgres', cluster, postgres: { ...rest, user: readOnly.user, password: readOnly.password } };
  },
});
