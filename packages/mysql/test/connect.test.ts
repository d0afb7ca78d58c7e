import { afterEach, describe, expect, it } from 'vitest';
import { sqlConnectConformance } from '@rollcall/conformance/sql';
import type { SqlRecordStore } from '@rollcall/sql';
import { CREATED_BY, createMysqlStore, schemaStatements, type MysqlOptions } from '../src/index.js';
import { mariadb, testDatabase, testOptions } from './support/mariadb.js';

const db = testDatabase('connect');

sqlConnectConformance<MysqlOptions>({
  name: 'mysql',
  server: mariadb(),
  options: (overrides) => testOptions(db.name, overrides),
  openStore: (options) => createMysqlStore(options),
  exec: (sql, params) => db.exec(sql, params),
  tablesWithPrefix: (prefix) => db.exec(`SHOW TABLES LIKE '${prefix}%'`),
  missingDatabase: { database: 'rollcall_does_not_exist' },
  invalidOptions: [],
  environment: { DATABASE: db.name, POLL_INTERVAL_MS: '50' },
  schemaFile: new URL('../schema.sql', import.meta.url),
  schemaStatements,
  createdBy: CREATED_BY,
});

describe('mysql: the unix socket', () => {
  const stores: SqlRecordStore[] = [];
  afterEach(async () => void (await Promise.allSettled(stores.splice(0).map((s) => s.close()))));

  it('a socketPath that does not exist is UNAVAILABLE naming the socket', async () => {
    const err = await createMysqlStore({ cluster: 'c1', ...testOptions(db.name, { socketPath: '/nonexistent/mysqld.sock' }), requestTimeoutMs: 2000 }).then(
      (store) => (stores.push(store), undefined),
      (e: Error & { code: string }) => e,
    );
    expect(err?.code).toBe('UNAVAILABLE');
    expect(err?.message).toContain('/nonexistent/mysqld.sock');
  });

  it('the server unix socket works as well as TCP', async () => {
    const store = await createMysqlStore({ cluster: 'c1', ...testOptions(db.name, { socketPath: mariadb().socket, tablePrefix: `s${process.pid}_` }), requestTimeoutMs: 2000 });
    stores.push(store);
    expect((await store.list('')).records).toEqual([]);
  });
});
