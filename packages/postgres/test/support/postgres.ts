import { createRequire } from 'node:module';
import { afterAll, beforeAll } from 'vitest';
import { readTestEnv, type PostgresEnv } from '@rollcall/tools/testenv';
import type { SqlRow, SqlValue } from '@rollcall/sql';
import { postgresOptions, type PostgresOptions } from '../../src/index.js';

interface AdminClient {
  connect(): Promise<void>;
  query(sql: string, params?: readonly SqlValue[]): Promise<{ rows: SqlRow[] }>;
  end(): Promise<void>;
  on(event: 'error', listener: (err: Error) => void): unknown;
}
const pg = createRequire(import.meta.url)('pg') as { Client: new (o: Record<string, unknown>) => AdminClient };

export function postgres(): PostgresEnv {
  const env = readTestEnv().postgres;
  if (!env) throw new Error('postgres is not up: the vitest global setup should have started it');
  return env;
}

/** Every `registry.postgres.*` default, as the plugin would resolve them. */
export const DEFAULTS = Object.fromEntries(Object.entries(postgresOptions).filter(([k]) => !k.startsWith('tls.')).map(([k, spec]) => [k, spec.default])) as unknown as PostgresOptions;

/** Options for the test user on the test database, tables in `schema`, with `overrides` on top. */
export function testOptions(schema: string, overrides: Partial<PostgresOptions> = {}): PostgresOptions {
  const env = postgres();
  return {
    ...DEFAULTS,
    host: env.host,
    port: env.port,
    user: env.user,
    password: env.password,
    database: env.database,
    schema,
    tls: { enabled: false, rejectUnauthorized: true },
    ...overrides,
  };
}

/** A connection of the test user (owner of the test database), as a DBA editing rows by hand. */
export async function adminClient(schema?: string): Promise<AdminClient> {
  const env = postgres();
  const client = new pg.Client({ host: env.host, port: env.port, user: env.user, password: env.password, database: env.database, ...(schema ? { options: `-c search_path=${schema}` } : {}) });
  await client.connect();
  return client;
}

let n = 0;
/** `?` placeholders as `$1, $2, ...`, so the shared suites' SQL runs here unchanged. */
const numbered = (sql: string) => sql.replace(/\?/g, () => `$${++n}`);

/**
 * A schema of its own for this test file (`rollcall_<name>_<random>`) in the test
 * database, created before its tests and dropped after. The read-only test user
 * may read every table created in it.
 */
export function testSchema(name: string): { readonly name: string; exec(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]> } {
  const schema = `rollcall_${name}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  let admin: AdminClient | undefined;
  beforeAll(async () => {
    const root = await adminClient();
    const { readOnly } = postgres();
    await root.query(`CREATE SCHEMA ${schema}`);
    await root.query(`GRANT USAGE ON SCHEMA ${schema} TO ${readOnly.user}`);
    await root.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA ${schema} GRANT SELECT ON TABLES TO ${readOnly.user}`);
    await root.end();
  });
  afterAll(async () => {
    await admin?.end().catch(() => undefined);
    const root = await adminClient();
    await root.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await root.end();
  });
  return {
    name: schema,
    async exec(sql, params = []) {
      if (!admin) {
        const client = await adminClient(schema);
        // A server restart (the suite's restart case) ends this connection: the next call opens another.
        client.on('error', () => {
          if (admin === client) admin = undefined;
        });
        admin = client;
      }
      n = 0;
      return (await admin.query(numbered(sql), params)).rows;
    },
  };
}
