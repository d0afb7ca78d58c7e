import { afterEach, describe, expect, it } from 'vitest';
import { sqlConnectConformance } from '@rollcall/conformance/sql';
import type { SqlRecordStore } from '@rollcall/sql';
import { CREATED_BY, createPostgresStore, schemaStatements, type PostgresOptions } from '../src/index.js';
import { postgres, testOptions, testSchema } from './support/postgres.js';

const schema = testSchema('connect');

sqlConnectConformance<PostgresOptions>({
  name: 'postgres',
  server: postgres(),
  options: (overrides) => testOptions(schema.name, overrides),
  openStore: (options) => createPostgresStore(options),
  exec: (sql, params) => schema.exec(sql, params),
  tablesWithPrefix: (prefix) => schema.exec(`SELECT tablename FROM pg_tables WHERE schemaname = ? AND tablename LIKE ?`, [schema.name, `${prefix}%`]),
  missingDatabase: { database: 'rollcall_does_not_exist' },
  invalidOptions: [
    [{ schema: 'Public' }, 'registry.postgres.schema'],
    [{ keepAliveIntervalMs: 10 }, 'registry.postgres.keepAliveIntervalMs'],
  ],
  environment: { DATABASE: postgres().database, SCHEMA: schema.name },
  schemaFile: new URL('../schema.sql', import.meta.url),
  schemaStatements,
  createdBy: CREATED_BY,
});

describe('postgres: the schema', () => {
  const stores: SqlRecordStore[] = [];
  afterEach(async () => void (await Promise.allSettled(stores.splice(0).map((s) => s.close()))));

  it('a schema that does not exist is INVALID_CONFIG naming registry.postgres.schema', async () => {
    const err = await createPostgresStore({ cluster: 'c1', ...testOptions('rollcall_no_such_schema'), requestTimeoutMs: 2000 }).then(
      (store) => (stores.push(store), undefined),
      (e: Error & { code: string; key?: string }) => e,
    );
    expect(err?.code).toBe('INVALID_CONFIG');
    expect(err?.key).toBe('registry.postgres.schema');
  });
});
