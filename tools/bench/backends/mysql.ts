import { randomBytes } from 'node:crypto';
import { createConnection } from 'mysql2/promise';
import { requireTestEnv } from '../../testenv/index.js';
import { mariadbStatusCounter } from '../counters/mariadb-status.js';
import { serverWideIdleProbe } from '../scenarios/idle-requests.js';
import { type BackendConfig, type BenchBackend, crashChildWithConfig } from '../target.js';

/** The test environment's MariaDB, in a database of its own, dropped afterwards. */
export const mysqlBackend: BenchBackend = {
  name: 'mysql',
  servers: ['mariadb'],
  async prepare() {
    const env = requireTestEnv('mariadb');
    // the test user may create databases named rollcall_%
    const database = `rollcall_bench_${randomBytes(4).toString('hex')}`;
    const admin = () => createConnection({ host: env.host, port: env.port, user: env.user, password: env.password });
    const connection = await admin();
    await connection.query(`CREATE DATABASE ${database}`).finally(() => connection.end());
    // Stores of one process with equal options share a pool and a poller; a purge interval
    // differing by a millisecond per slot gives each its own, as a process would have.
    const backendConfig = (slot: number): BackendConfig => ({
      type: 'mysql',
      mysql: { host: env.host, port: env.port, user: env.user, password: env.password, database, purgeIntervalMs: 60_000 + slot },
    });
    return {
      backendConfig,
      crashChild: crashChildWithConfig(backendConfig),
      idle: serverWideIdleProbe(backendConfig, mariadbStatusCounter(env)),
      async close() {
        const c = await admin();
        await c.query(`DROP DATABASE IF EXISTS ${database}`).finally(() => c.end());
      },
    };
  },
};
