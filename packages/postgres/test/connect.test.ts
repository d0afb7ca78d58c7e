import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { configFromEnv, createRegistry, type Logger, type Registry } from '@rollcall/core';
import { TcpProxy } from '@rollcall/tools/testenv';
import { schemaScript, tableNames, type SqlRecordStore } from '@rollcall/sql';
import { CREATED_BY, createPostgresStore, schemaStatements, type PostgresOptions } from '../src/index.js';
import { postgres, testOptions, testSchema } from './support/postgres.js';

const schema = testSchema('connect');
const stores: SqlRecordStore[] = [];
const registries: Registry[] = [];
afterEach(async () => {
  await Promise.allSettled(registries.splice(0).map((r) => r.close()));
  await Promise.allSettled(stores.splice(0).map((s) => s.close()));
});

let prefixes = 0;
const prefix = () => `c${process.pid}_${prefixes++}_`;

/** Connects and returns the error, or fails the test if it connected. */
async function connectError(options: PostgresOptions, requestTimeoutMs = 2000): Promise<Error & { code: string; key?: string }> {
  const result = await createPostgresStore({ cluster: 'c1', ...options, requestTimeoutMs }).then(
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

function section(overrides: Partial<PostgresOptions> = {}): Record<string, unknown> {
  const { tls: _tls, ...rest } = testOptions(schema.name, overrides);
  return rest;
}

describe('postgres: permissions', () => {
  it('a user without write rights gets PERMISSION_DENIED at connect, naming the privilege and the table, and writes nothing', async () => {
    const p = prefix();
    const writer = await createPostgresStore({ cluster: 'c1', ...testOptions(schema.name, { tablePrefix: p }), requestTimeoutMs: 2000 });
    stores.push(writer);
    await writer.create('lock/x', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 });
    const before = await schema.exec(`SELECT revision FROM ${p}state`);
    const { readOnly } = postgres();
    const err = await connectError(testOptions(schema.name, { tablePrefix: p, user: readOnly.user, password: readOnly.password }));
    expect(err.code).toBe('PERMISSION_DENIED');
    expect(err.message).toMatch(/^\[rollcall\] \[postgres\] this user may not UPDATE on c\d+_\d+_state; Rollcall needs SELECT, INSERT, UPDATE and DELETE/);
    expect(err.message).not.toContain(readOnly.password);
    expect(await schema.exec(`SELECT revision FROM ${p}state`)).toEqual(before);
  });

  it('a user without write rights on a schema with no tables gets PERMISSION_DENIED pointing at schema.sql', async () => {
    const { readOnly } = postgres();
    const p = prefix();
    const err = await connectError(testOptions(schema.name, { tablePrefix: p, user: readOnly.user, password: readOnly.password }));
    expect(err.code).toBe('PERMISSION_DENIED');
    expect(err.message).toContain('schema.sql');
    expect(await schema.exec(`SELECT tablename FROM pg_tables WHERE schemaname = ? AND tablename LIKE ?`, [schema.name, `${p}%`])).toEqual([]);
  });

  it('a wrong password is UNAUTHENTICATED, and the password is in no message and no log line', async () => {
    const lines: string[] = [];
    const password = 'Wr0ng-s3cret-Pa55';
    const err = await createRegistry({ type: 'postgres', cluster: 'c1', postgres: { ...section(), password } }, { logger: recordingLogger(lines) }).then(
      (r) => (registries.push(r), undefined),
      (e: Error & { code: string }) => e,
    );
    expect(err?.code).toBe('UNAUTHENTICATED');
    expect(err?.message).toMatch(/^\[rollcall\] \[postgres\] /);
    for (const text of [err!.message, String((err as { cause?: unknown }).cause), ...lines]) {
      expect(text).not.toContain(password);
      expect(text).not.toContain(postgres().password);
    }
  });
});

describe('postgres: unreachable servers fail at connect within the timeout', () => {
  const opened: TcpProxy[] = [];
  afterAll(async () => {
    await Promise.all(opened.map((p) => p.close()));
  });

  it('a port with nothing listening is UNAVAILABLE naming host and port', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise((r) => probe.close(r));
    const err = await connectError(testOptions(schema.name, { host: '127.0.0.1', port, connectTimeoutMs: 1000 }));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toContain(`127.0.0.1:${port}`);
  });

  it('a server that accepts and never answers is UNAVAILABLE once connectTimeoutMs has passed', async () => {
    // A stalled proxy accepts connections and never answers.
    const silent = await TcpProxy.start(postgres());
    silent.cut('stall');
    opened.push(silent);
    const port = silent.port;
    const started = Date.now();
    const err = await connectError(testOptions(schema.name, { host: '127.0.0.1', port, connectTimeoutMs: 1000 }), 1000);
    const elapsed = Date.now() - started;
    expect(err.code).toBe('UNAVAILABLE');
    expect(elapsed).toBeGreaterThanOrEqual(900);
    // A bound, not a speed claim: a hung connect must not hang the caller.
    expect(elapsed).toBeLessThan(10_000);
  });
});

describe('postgres: configuration', () => {
  it('a database that does not exist is INVALID_CONFIG naming registry.postgres.database', async () => {
    const err = await connectError(testOptions(schema.name, { database: 'rollcall_does_not_exist' }));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.postgres.database');
  });

  it('a schema that does not exist is INVALID_CONFIG naming registry.postgres.schema', async () => {
    const err = await connectError(testOptions('rollcall_no_such_schema'));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.postgres.schema');
  });

  it('TLS against a server without TLS is INVALID_CONFIG naming registry.postgres.tls.enabled', async () => {
    const err = await connectError({ ...testOptions(schema.name), tls: { enabled: true, rejectUnauthorized: true } });
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.postgres.tls.enabled');
  });

  it('an unreadable TLS file is INVALID_CONFIG naming its key, before anything is contacted', async () => {
    const err = await connectError({ ...testOptions(schema.name), tls: { enabled: true, rejectUnauthorized: true, caFile: '/nonexistent/ca.pem' } });
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.postgres.tls.caFile');
  });

  it.each([
    [{ user: undefined }, 'registry.postgres.user'],
    [{ database: undefined }, 'registry.postgres.database'],
    [{ database: 'a;b' }, 'registry.postgres.database'],
    [{ schema: 'Public' }, 'registry.postgres.schema'],
    [{ port: 70000 }, 'registry.postgres.port'],
    [{ poolSize: 0 }, 'registry.postgres.poolSize'],
    [{ keepAliveIntervalMs: 10 }, 'registry.postgres.keepAliveIntervalMs'],
    [{ pollIntervalMs: 1 }, 'registry.postgres.pollIntervalMs'],
    [{ tablePrefix: 'bad-prefix' }, 'registry.postgres.tablePrefix'],
    [{ tls: { caFile: '/ca.pem' } }, 'registry.postgres.tls.caFile'],
    [{ tls: { enabled: true, certFile: '/c.pem' } }, 'registry.postgres.tls.keyFile'],
    [{ color: 'blue' }, 'registry.postgres.color'],
  ])('%j is INVALID_CONFIG naming %s', async (overrides, key) => {
    const options = { ...section(), ...overrides } as Record<string, unknown>;
    for (const [k, v] of Object.entries(options)) if (v === undefined) delete options[k];
    const err = await createRegistry({ type: 'postgres', postgres: options }).then(
      (r) => (registries.push(r), undefined),
      (e: Error & { code: string; key: string }) => e,
    );
    expect(err?.code).toBe('INVALID_CONFIG');
    expect(err?.key).toBe(key);
    expect(err?.message).not.toContain(postgres().password);
  });

  it('a password of the wrong type is refused without showing it', async () => {
    const err = await createRegistry({ 'registry.type': 'postgres', 'registry.postgres.user': 'u', 'registry.postgres.database': 'd', 'registry.postgres.password': 12345678 }).then(
      () => undefined,
      (e: Error & { code: string; key: string }) => e,
    );
    expect(err?.key).toBe('registry.postgres.password');
    expect(err?.message).not.toContain('12345678');
  });

  it('the environment form connects: REGISTRY_POSTGRES_* variables', async () => {
    const env = postgres();
    const registry = await createRegistry(
      configFromEnv({
        REGISTRY_TYPE: 'postgres',
        REGISTRY_CLUSTER: 'envform',
        REGISTRY_POSTGRES_HOST: env.host,
        REGISTRY_POSTGRES_PORT: String(env.port),
        REGISTRY_POSTGRES_USER: env.user,
        REGISTRY_POSTGRES_PASSWORD: env.password,
        REGISTRY_POSTGRES_DATABASE: env.database,
        REGISTRY_POSTGRES_SCHEMA: schema.name,
        REGISTRY_POSTGRES_TABLE_PREFIX: prefix(),
        REGISTRY_POSTGRES_TLS_ENABLED: 'false',
      }),
    );
    registries.push(registry);
    expect(registry.state).toBe('connected');
  });
});

describe('postgres: schema.sql, for users without DDL rights', () => {
  const file = readFileSync(fileURLToPath(new URL('../schema.sql', import.meta.url)), 'utf8');

  it('is exactly the DDL the store runs on first use, with the state row', () => {
    const tables = tableNames('rollcall_');
    expect(file).toBe(schemaScript(schemaStatements(tables), tables, CREATED_BY));
  });

  it('applied by hand, it is a schema a store with createSchema false uses as it is', async () => {
    for (const statement of file.split(';\n').map((s) => s.replace(/^--.*$/gm, '').trim()).filter(Boolean)) await schema.exec(statement);
    const store = await createPostgresStore({ cluster: 'c1', ...testOptions(schema.name, { tablePrefix: 'rollcall_', createSchema: false }), requestTimeoutMs: 2000 });
    stores.push(store);
    const created = await store.create('lock/x', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 });
    expect(created.version).toBe('1');
    expect((await schema.exec('SELECT created_by FROM rollcall_state'))[0]!.created_by).toBe(CREATED_BY);
  });
});
