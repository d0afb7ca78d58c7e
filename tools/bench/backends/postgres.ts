import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { requireTestEnv } from '../../testenv/index.js';
import { postgresStatementsCounter } from '../counters/postgres-statements.js';
import { serverWideIdleProbe } from '../scenarios/idle-requests.js';
import { type BackendConfig, type BenchBackend, crashChildWithConfig } from '../target.js';

interface Client {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}
const pg = createRequire(import.meta.url)('pg') as { Client: new (config: Record<string, unknown>) => Client };

/** The test environment's PostgreSQL, in a schema of its own in the test database, dropped afterwards. */
export const postgresBackend: BenchBackend = {
  name: 'postgres',
  servers: ['postgres'],
  async prepare() {
    const env = requireTestEnv('postgres');
    const schema = `rollcall_bench_${randomBytes(4).toString('hex')}`;
    const admin = async (sql: string) => {
      const client = new pg.Client({ host: env.host, port: env.port, user: env.user, password: env.password, database: env.database });
      await client.connect();
      await client.query(sql).finally(() => client.end());
    };
    await admin(`CREATE SCHEMA ${schema}`);
    // Stores of one process with equal options share a pool, a listening connection and a poller;
    // a purge interval differing by a millisecond per slot gives each its own, as a process would have.
    const backendConfig = (slot: number): BackendConfig => ({
      type: 'postgres',
      postgres: { host: env.host, port: env.port, user: env.user, password: env.password, database: env.database, schema, purgeIntervalMs: 60_000 + slot },
    });
    return {
      backendConfig,
      crashChild: crashChildWithConfig(backendConfig),
      idle: serverWideIdleProbe(backendConfig, postgresStatementsCounter(env)),
      close: () => admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`),
    };
  },
};
