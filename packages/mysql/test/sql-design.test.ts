import { sqlDesignConformance } from '@rollcall/conformance/sql';
import { createMysqlStore } from '../src/index.js';
import { mariadb, testDatabase, testOptions } from './support/mariadb.js';

const db = testDatabase('design');

sqlDesignConformance({
  name: 'mysql',
  openStore: (cluster, options) => createMysqlStore({ cluster, ...testOptions(db.name, options), requestTimeoutMs: 5000 }),
  registryConfig: (cluster, options) => {
    const { tls: _tls, ...rest } = testOptions(db.name, options);
    return { type: 'mysql', cluster, mysql: rest };
  },
  exec: (sql, params) => db.exec(sql, params),
  readOnlyUserConfig: (cluster, options) => {
    const { tls: _tls, ...rest } = testOptions(db.name, options);
    const { readOnly } = mariadb();
    return { type: 'mysql', cluster, mysql: { ...rest, user: readOnly.user, password: readOnly.password } };
  },
});
