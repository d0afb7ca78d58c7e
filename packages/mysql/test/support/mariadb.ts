import { createRequire } from 'node:module';
import { afterAll, beforeAll } from 'vitest';
import { readTestEnv, type MariadbEnv } from '@rollcall/tools/testenv';
import type { SqlRow, SqlValue } from '@rollcall/sql';
import { mysqlOptions, type MysqlOptions } from '../../src/index.js';

interface AdminConnection {
  execute(sql: string, params?: readonly SqlValue[]): Promise<[unknown, unknown]>;
  query(sql: string): Promise<[unknown, unknown]>;
  end(): Promise<void>;
  on(event: 'error', listener: (err: Error) => void): unknown;
}
const mysql = createRequire(import.meta.url)('mysql2/promise') as { createConnection(o: Record<string, unknown>): Promise<AdminConnection> };

export function mariadb(): MariadbEnv {
  const env = readTestEnv().mariadb;
  if (!env) throw new Error('mariadb is not up: the vitest global setup should have started it');
  return env;
}

/** Every `registry.mysql.*` default, as the plugin would resolve them. */
export const DEFAULTS = Object.fromEntries(Object.entries(mysqlOptions).filter(([k]) => !k.startsWith('tls.')).map(([k, spec]) => [k, spec.default])) as unknown as MysqlOptions;

/** Options for the test user on `database`, with `overrides` on top. */
export function testOptions(database: string, overrides: Partial<MysqlOptions> = {}): MysqlOptions {
  const env = mariadb();
  return {
    ...DEFAULTS,
    host: env.host,
    port: env.port,
    user: env.user,
    password: env.password,
    database,
    tls: { enabled: false, rejectUnauthorized: true },
    ...overrides,
  };
}

/** A connection of the test user (all privileges on rollcall_*), as a DBA editing rows by hand. */
export async function adminConnection(database?: string): Promise<AdminConnection> {
  const env = mariadb();
  return mysql.createConnection({ host: env.host, port: env.port, user: env.user, password: env.password, database, supportBigNumbers: true });
}

/**
 * A database of its own for this test file (`rollcall_<name>_<random>`), created
 * before its tests and dropped after. The read-only test user may read it.
 */
export function testDatabase(name: string): { readonly name: string; exec(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]> } {
  const database = `rollcall_${name}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  let admin: AdminConnection | undefined;
  beforeAll(async () => {
    const root = await adminConnection();
    await root.query(`CREATE DATABASE ${database}`);
    await root.end();
  });
  afterAll(async () => {
    await admin?.end().catch(() => undefined);
    const root = await adminConnection();
    await root.query(`DROP DATABASE IF EXISTS ${database}`);
    await root.end();
  });
  return {
    name: database,
    async exec(sql, params = []) {
      if (!admin) {
        const connection = await adminConnection(database);
        // A server restart (the suite's restart case) ends this connection: the next call opens another.
        connection.on('error', () => {
          if (admin === connection) admin = undefined;
        });
        admin = connection;
      }
      const [rows] = await admin.execute(sql, params);
      return Array.isArray(rows) ? (rows as SqlRow[]) : [];
    },
  };
}
