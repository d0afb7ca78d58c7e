import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { configFromEnv, createRegistry, type Logger, type Registry } from '@rollcall/core';
import { TcpProxy } from '@rollcall/tools/testenv';
import { schemaScript, tableNames, type SqlRecordStore } from '@rollcall/sql';
import { CREATED_BY, createMysqlStore, schemaStatements, type MysqlOptions } from '../src/index.js';
import { mariadb, testDatabase, testOptions } from './support/mariadb.js';

const db = testDatabase('connect');
const stores: SqlRecordStore[] = [];
const registries: Registry[] = [];
afterEach(async () => {
  await Promise.allSettled(registries.splice(0).map((r) => r.close()));
  await Promise.allSettled(stores.splice(0).map((s) => s.close()));
});

let prefixes = 0;
const prefix = () => `c${process.pid}_${prefixes++}_`;

/** Connects and returns the error, or fails the test if it connected. */
async function connectError(options: MysqlOptions, requestTimeoutMs = 2000): Promise<Error & { code: string; key?: string }> {
  const result = await createMysqlStore({ cluster: 'c1', ...options, requestTimeoutMs }).then(
    (store) => (stores.push(store), undefined),
    (err: Error & { code: string }) => err,
  );
  if (!result) throw new Error('connected, but an error was expected');
  return result;
}

/** A logger that keeps every line, to check no secret reaches a log. */
function recordingLogger(lines: string[]): Logger {
  const log = (...args: unknown[]) => void lines.push(JSON.stringify(args, (_k, v) => (v instanceof Error ? { message: v.message, cause: String(v.cause) } : v)));
  return { trace: log, debug: log, info: log, warn: log, error: log, fatal: log, child: () => recordingLogger(lines) } as unknown as Logger;
}

describe('mysql: permissions', () => {
  it('a user without write rights gets PERMISSION_DENIED at connect, naming the privilege and the table, and writes nothing', async () => {
    const p = prefix();
    const writer = await createMysqlStore({ cluster: 'c1', ...testOptions(db.name, { tablePrefix: p }), requestTimeoutMs: 2000 });
    stores.push(writer);
    await writer.create('lock/x', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 });
    const before = await db.exec(`SELECT revision FROM ${p}state`);
    const { readOnly } = mariadb();
    const err = await connectError(testOptions(db.name, { tablePrefix: p, user: readOnly.user, password: readOnly.password }));
    expect(err.code).toBe('PERMISSION_DENIED');
    expect(err.message).toMatch(/^\[rollcall\] \[mysql\] this user may not UPDATE on c\d+_\d+_state; Rollcall needs SELECT, INSERT, UPDATE and DELETE/);
    expect(err.message).not.toContain(readOnly.password);
    expect(await db.exec(`SELECT revision FROM ${p}state`)).toEqual(before);
  });

  it('a user without write rights on a database with no schema gets PERMISSION_DENIED pointing at schema.sql', async () => {
    const { readOnly } = mariadb();
    const p = prefix();
    const err = await connectError(testOptions(db.name, { tablePrefix: p, user: readOnly.user, password: readOnly.password }));
    expect(err.code).toBe('PERMISSION_DENIED');
    expect(err.message).toContain('schema.sql');
    expect(await db.exec(`SHOW TABLES LIKE '${p}%'`)).toEqual([]);
  });

  it('a wrong password is UNAUTHENTICATED, and the password is in no message and no log line', async () => {
    const lines: string[] = [];
    const password = 'Wr0ng-s3cret-Pa55';
    const err = await createRegistry({ type: 'mysql', cluster: 'c1', mysql: { ...section(), password } }, { logger: recordingLogger(lines) }).then(
      (r) => (registries.push(r), undefined),
      (e: Error & { code: string }) => e,
    );
    expect(err?.code).toBe('UNAUTHENTICATED');
    expect(err?.message).toMatch(/^\[rollcall\] \[mysql\] /);
    for (const text of [err!.message, String((err as { cause?: unknown }).cause), ...lines]) {
      expect(text).not.toContain(password);
      expect(text).not.toContain(mariadb().password);
    }
  });
});

describe('mysql: unreachable servers fail at connect within the timeout', () => {
  const opened: TcpProxy[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((p) => p.close()));
  });

  it('a port with nothing listening is UNAVAILABLE naming host and port', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    const err = await connectError(testOptions(db.name, { host: '127.0.0.1', port, connectTimeoutMs: 1000 }));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toContain(`127.0.0.1:${port}`);
  });

  it('a server that accepts and never answers is UNAVAILABLE once connectTimeoutMs has passed', async () => {
    // A stalled proxy accepts connections and never answers.
    const silent = await TcpProxy.start(mariadb());
    silent.cut('stall');
    opened.push(silent);
    const port = silent.port;
    const started = Date.now();
    const err = await connectError(testOptions(db.name, { host: '127.0.0.1', port, connectTimeoutMs: 1000 }), 1000);
    const elapsed = Date.now() - started;
    expect(err.code).toBe('UNAVAILABLE');
    expect(elapsed).toBeGreaterThanOrEqual(900);
    // A bound, not a speed claim: a hung connect must not hang the caller.
    expect(elapsed).toBeLessThan(10_000);
  });

  it('a socketPath that does not exist is UNAVAILABLE naming the socket', async () => {
    const err = await connectError(testOptions(db.name, { socketPath: '/nonexistent/mysqld.sock' }));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toContain('/nonexistent/mysqld.sock');
  });

  it('the server unix socket works as well as TCP', async () => {
    const store = await createMysqlStore({ cluster: 'c1', ...testOptions(db.name, { socketPath: mariadb().socket, tablePrefix: prefix() }), requestTimeoutMs: 2000 });
    stores.push(store);
    expect((await store.list('')).records).toEqual([]);
  });
});

function section(overrides: Partial<MysqlOptions> = {}): Record<string, unknown> {
  const { tls: _tls, ...rest } = testOptions(db.name, overrides);
  return rest;
}

describe('mysql: configuration', () => {
  it('a database that does not exist is INVALID_CONFIG naming registry.mysql.database', async () => {
    const err = await connectError(testOptions('rollcall_does_not_exist'));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.mysql.database');
  });

  it('TLS against a server without TLS is INVALID_CONFIG naming registry.mysql.tls.enabled', async () => {
    const err = await connectError({ ...testOptions(db.name), tls: { enabled: true, rejectUnauthorized: true } });
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.mysql.tls.enabled');
  });

  it('an unreadable TLS file is INVALID_CONFIG naming its key, before anything is contacted', async () => {
    const err = await connectError({ ...testOptions(db.name), tls: { enabled: true, rejectUnauthorized: true, caFile: '/nonexistent/ca.pem' } });
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.mysql.tls.caFile');
  });

  it.each([
    [{ user: undefined }, 'registry.mysql.user'],
    [{ database: undefined }, 'registry.mysql.database'],
    [{ database: 'a;b' }, 'registry.mysql.database'],
    [{ port: 70000 }, 'registry.mysql.port'],
    [{ poolSize: 0 }, 'registry.mysql.poolSize'],
    [{ pollIntervalMs: 1 }, 'registry.mysql.pollIntervalMs'],
    [{ tablePrefix: 'bad-prefix' }, 'registry.mysql.tablePrefix'],
    [{ tls: { caFile: '/ca.pem' } }, 'registry.mysql.tls.caFile'],
    [{ tls: { enabled: true, certFile: '/c.pem' } }, 'registry.mysql.tls.keyFile'],
    [{ color: 'blue' }, 'registry.mysql.color'],
  ])('%j is INVALID_CONFIG naming %s', async (overrides, key) => {
    const mysql = { ...section(), ...overrides } as Record<string, unknown>;
    for (const [k, v] of Object.entries(mysql)) if (v === undefined) delete mysql[k];
    const err = await createRegistry({ type: 'mysql', mysql }).then(
      (r) => (registries.push(r), undefined),
      (e: Error & { code: string; key: string }) => e,
    );
    expect(err?.code).toBe('INVALID_CONFIG');
    expect(err?.key).toBe(key);
    expect(err?.message).not.toContain(mariadb().password);
  });

  it('a password of the wrong type is refused without showing it', async () => {
    const err = await createRegistry({ 'registry.type': 'mysql', 'registry.mysql.user': 'u', 'registry.mysql.database': 'd', 'registry.mysql.password': 12345678 }).then(
      () => undefined,
      (e: Error & { code: string; key: string }) => e,
    );
    expect(err?.key).toBe('registry.mysql.password');
    expect(err?.message).not.toContain('12345678');
  });

  it('the environment form connects: REGISTRY_MYSQL_* variables', async () => {
    const env = mariadb();
    const registry = await createRegistry(
      configFromEnv({
        REGISTRY_TYPE: 'mysql',
        REGISTRY_CLUSTER: 'envform',
        REGISTRY_MYSQL_HOST: env.host,
        REGISTRY_MYSQL_PORT: String(env.port),
        REGISTRY_MYSQL_USER: env.user,
        REGISTRY_MYSQL_PASSWORD: env.password,
        REGISTRY_MYSQL_DATABASE: db.name,
        REGISTRY_MYSQL_TABLE_PREFIX: prefix(),
        REGISTRY_MYSQL_POLL_INTERVAL_MS: '50',
        REGISTRY_MYSQL_TLS_ENABLED: 'false',
      }),
    );
    registries.push(registry);
    expect(registry.state).toBe('connected');
  });
});

describe('mysql: schema.sql, for users without DDL rights', () => {
  const file = readFileSync(fileURLToPath(new URL('../schema.sql', import.meta.url)), 'utf8');

  it('is exactly the DDL the store runs on first use, with the state row', () => {
    const tables = tableNames('rollcall_');
    expect(file).toBe(schemaScript(schemaStatements(tables), tables, CREATED_BY));
  });

  it('applied by hand, it is a schema a store with createSchema false uses as it is', async () => {
    for (const statement of file.split(';\n').map((s) => s.replace(/^--.*$/gm, '').trim()).filter(Boolean)) await db.exec(statement);
    const store = await createMysqlStore({ cluster: 'c1', ...testOptions(db.name, { tablePrefix: 'rollcall_', createSchema: false }), requestTimeoutMs: 2000 });
    stores.push(store);
    const created = await store.create('lock/x', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 });
    expect(created.version).toBe('1');
    expect((await db.exec('SELECT created_by FROM rollcall_state'))[0]!.created_by).toBe(CREATED_BY);
  });
});
