import { readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { configFromEnv, createRegistry, type ConfigSource, type Logger, type Registry } from '@rollcall/core';
import { schemaScript, tableNames, type SqlRecordStore, type SqlRow, type SqlValue } from '@rollcall/sql';
import { afterEach, describe, expect, it } from 'vitest';

/** What `sqlConnectConformance` needs from a SQL backend whose database is a server (MySQL/MariaDB, PostgreSQL). */
export interface SqlConnectConformanceOptions<O extends object = Record<string, unknown>> {
  /** The backend: `mysql`, `postgres`; its configuration section, its errors' `[name]` and its `REGISTRY_<NAME>_*` variables. */
  name: string;
  /** The test server: its address, the test user's password, and a user who may only SELECT. */
  server: { host: string; port: number; password: string; readOnly: { user: string; password: string } };
  /** The test user's options on this file's test database (or schema), with `overrides` on top. */
  options(overrides?: Record<string, unknown>): O;
  /** Opens a store with the backend's own function. */
  openStore(options: O & { cluster: string; requestTimeoutMs: number }): Promise<SqlRecordStore>;
  /** Runs SQL as an administrator in the test database (or schema). */
  exec(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
  /** The tables in the test database (or schema) whose names start with `prefix`: the dialect's catalog query. */
  tablesWithPrefix(prefix: string): Promise<SqlRow[]>;
  /** Options that name a database that does not exist (INVALID_CONFIG naming `registry.<name>.database`). */
  missingDatabase: Record<string, unknown>;
  /** `[overrides, key]` rows of the dialect's own options, each INVALID_CONFIG naming `key`, beside the shared ones. */
  invalidOptions: readonly [Record<string, unknown>, string][];
  /** `REGISTRY_<NAME>_*` variables (name without the prefix) that place a registry in the test database, beside host, port, user, password, table prefix and TLS. */
  environment: Record<string, string>;
  /** The shipped schema.sql, for users without DDL rights. */
  schemaFile: URL;
  /** The backend's DDL for these tables, and what it writes to the state row's `created_by`. */
  schemaStatements(tables: ReturnType<typeof tableNames>): string[];
  createdBy: string;
}

type CodedError = Error & { code: string; key?: string };

/** A logger that keeps every line, to check no secret reaches a log. */
function recordingLogger(lines: string[]): Logger {
  const log = (...args: unknown[]) => void lines.push(JSON.stringify(args, (_k, v) => (v instanceof Error ? { message: v.message, cause: String(v.cause) } : v)));
  return { trace: log, debug: log, info: log, warn: log, error: log, fatal: log, child: () => recordingLogger(lines) } as unknown as Logger;
}

/** A port on 127.0.0.1 that accepts connections and never answers; `close` drops them. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const held: Socket[] = [];
  const server = createServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((resolve) => (held.forEach((s) => s.destroy()), server.close(() => resolve()))),
  };
}

/** A port on 127.0.0.1 with nothing listening (bound, then closed). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as { port: number }).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const LEASE = { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 };

/**
 * What every SQL server backend does at connect: a user without write rights, a wrong
 * password, a server that is not there or never answers, each invalid option, the
 * environment form, and the shipped schema.sql. The cases only the dialect has (a unix
 * socket, a schema) stay in its package. Call it at the top level of a vitest file.
 */
export function sqlConnectConformance<O extends object>(options: SqlConnectConformanceOptions<O>): void {
  const { name, server } = options;
  const stores: SqlRecordStore[] = [];
  const registries: Registry[] = [];
  afterEach(async () => {
    await Promise.allSettled(registries.splice(0).map((r) => r.close()));
    await Promise.allSettled(stores.splice(0).map((s) => s.close()));
  });

  let prefixes = 0;
  const prefix = () => `c${process.pid}_${prefixes++}_`;

  async function open(storeOptions: O, requestTimeoutMs = 2000): Promise<SqlRecordStore> {
    const store = await options.openStore({ ...storeOptions, cluster: 'c1', requestTimeoutMs });
    stores.push(store);
    return store;
  }

  /** Connects and returns the error, or fails the test if it connected. */
  async function connectError(storeOptions: O, requestTimeoutMs = 2000): Promise<CodedError> {
    const result = await open(storeOptions, requestTimeoutMs).then(
      () => undefined,
      (err: CodedError) => err,
    );
    if (!result) throw new Error('connected, but an error was expected');
    return result;
  }

  /** The registry section: the options without `tls`, whose defaults the section leaves out. */
  function section(overrides: Record<string, unknown> = {}): Record<string, unknown> {
    const { tls: _tls, ...rest } = options.options(overrides) as Record<string, unknown>;
    return rest;
  }

  async function registryError(config: ConfigSource, logger?: Logger): Promise<CodedError | undefined> {
    return createRegistry(config, logger ? { logger } : undefined).then(
      (r) => (registries.push(r), undefined),
      (e: CodedError) => e,
    );
  }

  describe(`${name}: permissions`, () => {
    it('a user without write rights gets PERMISSION_DENIED at connect, naming the privilege and the table, and writes nothing', async () => {
      const p = prefix();
      const writer = await open(options.options({ tablePrefix: p }));
      await writer.create('lock/x', LEASE);
      const before = await options.exec(`SELECT revision FROM ${p}state`);
      const err = await connectError(options.options({ tablePrefix: p, user: server.readOnly.user, password: server.readOnly.password }));
      expect(err.code).toBe('PERMISSION_DENIED');
      expect(err.message).toMatch(new RegExp(`^\\[rollcall\\] \\[${name}\\] this user may not UPDATE on c\\d+_\\d+_state; Rollcall needs SELECT, INSERT, UPDATE and DELETE`));
      expect(err.message).not.toContain(server.readOnly.password);
      expect(await options.exec(`SELECT revision FROM ${p}state`)).toEqual(before);
    });

    it('a user without write rights where there are no tables gets PERMISSION_DENIED pointing at schema.sql', async () => {
      const p = prefix();
      const err = await connectError(options.options({ tablePrefix: p, user: server.readOnly.user, password: server.readOnly.password }));
      expect(err.code).toBe('PERMISSION_DENIED');
      expect(err.message).toContain('schema.sql');
      expect(await options.tablesWithPrefix(p)).toEqual([]);
    });

    it('a wrong password is UNAUTHENTICATED, and the password is in no message and no log line', async () => {
      const lines: string[] = [];
      const password = 'Wr0ng-s3cret-Pa55';
      const err = await registryError({ type: name, cluster: 'c1', [name]: { ...section(), password } } as ConfigSource, recordingLogger(lines));
      expect(err?.code).toBe('UNAUTHENTICATED');
      expect(err?.message).toMatch(new RegExp(`^\\[rollcall\\] \\[${name}\\] `));
      for (const text of [err!.message, String((err as { cause?: unknown }).cause), ...lines]) {
        expect(text).not.toContain(password);
        expect(text).not.toContain(server.password);
      }
    });
  });

  describe(`${name}: unreachable servers fail at connect within the timeout`, () => {
    it('a port with nothing listening is UNAVAILABLE naming host and port', async () => {
      const port = await closedPort();
      const err = await connectError(options.options({ host: '127.0.0.1', port, connectTimeoutMs: 1000 }));
      expect(err.code).toBe('UNAVAILABLE');
      expect(err.message).toContain(`127.0.0.1:${port}`);
    });

    it('a server that accepts and never answers is UNAVAILABLE once connectTimeoutMs has passed', async () => {
      const silent = await silentServer();
      try {
        const started = Date.now();
        const err = await connectError(options.options({ host: '127.0.0.1', port: silent.port, connectTimeoutMs: 1000 }), 1000);
        const elapsed = Date.now() - started;
        expect(err.code).toBe('UNAVAILABLE');
        expect(elapsed).toBeGreaterThanOrEqual(900);
        // A bound, not a speed claim: a hung connect must not hang the caller.
        expect(elapsed).toBeLessThan(10_000);
      } finally {
        await silent.close();
      }
    });
  });

  describe(`${name}: configuration`, () => {
    it(`a database that does not exist is INVALID_CONFIG naming registry.${name}.database`, async () => {
      const err = await connectError(options.options(options.missingDatabase));
      expect(err.code).toBe('INVALID_CONFIG');
      expect(err.key).toBe(`registry.${name}.database`);
    });

    it(`TLS against a server without TLS is INVALID_CONFIG naming registry.${name}.tls.enabled`, async () => {
      const err = await connectError({ ...options.options(), tls: { enabled: true, rejectUnauthorized: true } });
      expect(err.code).toBe('INVALID_CONFIG');
      expect(err.key).toBe(`registry.${name}.tls.enabled`);
    });

    it(`TLS without verifying the server (tls.rejectUnauthorized=false) is a warning at connect naming registry.${name}.tls.rejectUnauthorized`, async () => {
      const lines: string[] = [];
      const unverified = await options.openStore({ ...options.options(), tls: { enabled: true, rejectUnauthorized: false }, cluster: 'c1', requestTimeoutMs: 2000, logger: recordingLogger(lines) } as never).then(
        (store) => (stores.push(store), undefined),
        (err: CodedError) => err,
      );
      expect(unverified?.key, 'the test server has no TLS: the connect itself fails').toBe(`registry.${name}.tls.enabled`);
      expect(lines.filter((l) => l.includes(`registry.${name}.tls.rejectUnauthorized=false`))).toHaveLength(1);
      const verifiedLines: string[] = [];
      await options.openStore({ ...options.options(), tls: { enabled: true, rejectUnauthorized: true }, cluster: 'c1', requestTimeoutMs: 2000, logger: recordingLogger(verifiedLines) } as never).catch(() => undefined);
      expect(verifiedLines.filter((l) => l.includes('rejectUnauthorized'))).toEqual([]);
    });

    it('an unreadable TLS file is INVALID_CONFIG naming its key, before anything is contacted', async () => {
      const err = await connectError({ ...options.options(), tls: { enabled: true, rejectUnauthorized: true, caFile: '/nonexistent/ca.pem' } });
      expect(err.code).toBe('INVALID_CONFIG');
      expect(err.key).toBe(`registry.${name}.tls.caFile`);
    });

    const shared: [Record<string, unknown>, string][] = [
      [{ user: undefined }, 'user'],
      [{ database: undefined }, 'database'],
      [{ database: 'a;b' }, 'database'],
      [{ port: 70000 }, 'port'],
      [{ poolSize: 0 }, 'poolSize'],
      [{ pollIntervalMs: 1 }, 'pollIntervalMs'],
      [{ tablePrefix: 'bad-prefix' }, 'tablePrefix'],
      [{ tls: { caFile: '/ca.pem' } }, 'tls.caFile'],
      [{ tls: { enabled: true, certFile: '/c.pem' } }, 'tls.keyFile'],
      [{ color: 'blue' }, 'color'],
    ];
    it.each([...shared.map(([overrides, key]): [Record<string, unknown>, string] => [overrides, `registry.${name}.${key}`]), ...options.invalidOptions])(
      '%j is INVALID_CONFIG naming %s',
      async (overrides, key) => {
        const backendSection = { ...section(), ...overrides };
        for (const [k, v] of Object.entries(backendSection)) if (v === undefined) delete backendSection[k];
        const err = await registryError({ type: name, [name]: backendSection } as ConfigSource);
        expect(err?.code).toBe('INVALID_CONFIG');
        expect(err?.key).toBe(key);
        expect(err?.message).not.toContain(server.password);
      },
    );

    it('a password of the wrong type is refused without showing it', async () => {
      const err = await createRegistry({ 'registry.type': name, [`registry.${name}.user`]: 'u', [`registry.${name}.database`]: 'd', [`registry.${name}.password`]: 12345678 }).then(
        () => undefined,
        (e: CodedError) => e,
      );
      expect(err?.key).toBe(`registry.${name}.password`);
      expect(err?.message).not.toContain('12345678');
    });

    it(`the environment form connects: REGISTRY_${name.toUpperCase()}_* variables`, async () => {
      const variable = (key: string) => `REGISTRY_${name.toUpperCase()}_${key}`;
      const own = Object.fromEntries(Object.entries(options.environment).map(([k, v]) => [variable(k), v]));
      const registry = await createRegistry(
        configFromEnv({
          REGISTRY_TYPE: name,
          REGISTRY_CLUSTER: 'envform',
          [variable('HOST')]: server.host,
          [variable('PORT')]: String(server.port),
          [variable('USER')]: String((options.options() as Record<string, unknown>).user),
          [variable('PASSWORD')]: server.password,
          [variable('TABLE_PREFIX')]: prefix(),
          [variable('TLS_ENABLED')]: 'false',
          ...own,
        }),
      );
      registries.push(registry);
      expect(registry.state).toBe('connected');
    });
  });

  describe(`${name}: schema.sql, for users without DDL rights`, () => {
    const file = readFileSync(options.schemaFile, 'utf8');

    it('is exactly the DDL the store runs on first use, with the state row', () => {
      const tables = tableNames('rollcall_');
      expect(file).toBe(schemaScript(options.schemaStatements(tables), tables, options.createdBy));
    });

    it('applied by hand, it is a schema a store with createSchema false uses as it is', async () => {
      for (const statement of file.split(';\n').map((s) => s.replace(/^--.*$/gm, '').trim()).filter(Boolean)) await options.exec(statement);
      const store = await open(options.options({ tablePrefix: 'rollcall_', createSchema: false }));
      const created = await store.create('lock/x', LEASE);
      expect(created.version).toBe('1');
      expect((await options.exec('SELECT created_by FROM rollcall_state'))[0]!.created_by).toBe(options.createdBy);
    });
  });
}
