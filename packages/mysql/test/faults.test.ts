import { restartServer, startServer, stopServer } from '@rollcall/tools/testenv';
import { sqlServerConformance } from '@rollcall/conformance/sql';
import { createMysqlStore } from '../src/index.js';
import { testDatabase, testOptions } from './support/mariadb.js';

const db = testDatabase('faults');

sqlServerConformance({
  name: 'mysql',
  server: 'MariaDB',
  openStore: (cluster, options, requestTimeoutMs) => createMysqlStore({ cluster, ...testOptions(db.name, options), requestTimeoutMs }),
  registryConfig: (options) => {
    const { tls: _tls, ...mysql } = testOptions(db.name, options);
    return { type: 'mysql', mysql };
  },
  stopServer: () => stopServer('mariadb'),
  startServer: () => startServer('mariadb'),
  restartServer: () => restartServer('mariadb'),
});
