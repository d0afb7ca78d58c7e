import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { configFromEnv, createRegistry, type Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { schemaScript, tableNames } from '@rollcall/sql';
import { CREATED_BY, createSqliteStore, schemaStatements, type SqliteStore } from '../src/index.js';
import { addonError } from '../src/client.js';
import { rawConnection, tempDir } from './support/sqlite.js';

const dir = tempDir();
const registries: Registry[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  await Promise.allSettled(registries.splice(0).map((r) => r.close()));
  await Promise.allSettled(stores.splice(0).map((s) => s.close()));
});

const lease = { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 };

async function configError(sqlite: Record<string, unknown>): Promise<{ code: string; key?: string; message: string }> {
  return createRegistry({ type: 'sqlite', sqlite }).then(
    (r) => {
      registries.push(r);
      throw new Error('connected, but an error was expected');
    },
    (e: { code: string; key?: string; message: string }) => e,
  );
}

describe('sqlite: registry.sqlite.path', () => {
  it('defaults to rollcall.db in the working directory, created on first use', async () => {
    const cwd = process.cwd();
    const here = join(dir, 'default');
    mkdirSync(here);
    process.chdir(here);
    try {
      const registry = await createRegistry({ type: 'sqlite' });
      registries.push(registry);
      expect((registryStore(registry) as SqliteStore).path).toBe(join(here, 'rollcall.db'));
      expect(existsSync(join(here, 'rollcall.db'))).toBe(true);
    } finally {
      process.chdir(cwd);
    }
  });

  it('is in WAL mode, so readers in other processes never block the writer', async () => {
    const path = join(dir, 'wal.db');
    stores.push(await createSqliteStore({ cluster: 'c', path, requestTimeoutMs: 2000 }));
    const raw = rawConnection(path);
    expect(await raw.exec('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
    raw.close();
  });

  it('the environment form names the file: REGISTRY_SQLITE_PATH', async () => {
    const path = join(dir, 'env.db');
    const registry = await createRegistry(configFromEnv({ REGISTRY_TYPE: 'sqlite', REGISTRY_SQLITE_PATH: path, REGISTRY_SQLITE_POLL_INTERVAL_MS: '50' }));
    registries.push(registry);
    expect((registryStore(registry) as SqliteStore).path).toBe(path);
  });

  it('a directory that does not exist is INVALID_CONFIG naming the key, and nothing is created', async () => {
    const err = await configError({ path: join(dir, 'missing', 'x.db') });
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.sqlite.path');
    expect(err.message).toContain(join(dir, 'missing'));
    expect(existsSync(join(dir, 'missing'))).toBe(false);
  });

  it('a path that is a directory is INVALID_CONFIG', async () => {
    const err = await configError({ path: dir });
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.sqlite.path');
  });

  it('a file that is not a SQLite database is INVALID_CONFIG, and the file is left as it was', async () => {
    const path = join(dir, 'not-a-db.txt');
    writeFileSync(path, 'hello, this is a text file and certainly not a database '.repeat(20));
    const err = await configError({ path });
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.sqlite.path');
    expect(err.message).toContain('not a usable SQLite database');
  });

  it.each([
    [{ path: '' }, 'registry.sqlite.path'],
    [{ path: '  ' }, 'registry.sqlite.path'],
    [{ busyTimeoutMs: -1 }, 'registry.sqlite.busyTimeoutMs'],
    [{ pollIntervalMs: 0 }, 'registry.sqlite.pollIntervalMs'],
    [{ tablePrefix: '1x' }, 'registry.sqlite.tablePrefix'],
    [{ file: 'x.db' }, 'registry.sqlite.file'],
  ])('%j is INVALID_CONFIG naming %s', async (sqlite, key) => {
    const err = await configError(sqlite);
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe(key);
  });
});

describe('sqlite: another process holding the write lock', () => {
  it('a write waits and retries while the lock is held briefly, then succeeds', async () => {
    const path = join(dir, 'busy.db');
    const store = await createSqliteStore({ cluster: 'c', path, requestTimeoutMs: 5000 });
    stores.push(store);
    const raw = rawConnection(path);
    await raw.exec('BEGIN IMMEDIATE');
    const write = store.create('lock/x', lease);
    let released = false;
    setTimeout(() => {
      released = true;
      void raw.exec('COMMIT');
    }, 300);
    const created = await write;
    expect(released).toBe(true);
    expect((await store.get('lock/x'))!.version).toBe(created.version);
    raw.close();
  });

  it('a lock held past the request timeout fails the write UNAVAILABLE and writes nothing', async () => {
    const path = join(dir, 'busy2.db');
    const store = await createSqliteStore({ cluster: 'c', path, requestTimeoutMs: 400 });
    stores.push(store);
    const raw = rawConnection(path);
    await raw.exec('BEGIN IMMEDIATE');
    const err = await store.create('lock/x', lease).then(
      () => undefined,
      (e: { code: string; message: string }) => e,
    );
    expect(err?.code).toBe('UNAVAILABLE');
    expect(err?.message).toContain('locked by another process');
    await raw.exec('COMMIT');
    expect(await store.get('lock/x')).toBeUndefined();
    expect((await store.list('')).revision).toBe('0');
    raw.close();
  });
});

describe('sqlite: schema.sql', () => {
  const file = readFileSync(fileURLToPath(new URL('../schema.sql', import.meta.url)), 'utf8');

  it('is exactly the DDL the store runs on first use, with the state row', () => {
    const tables = tableNames('rollcall_');
    expect(file).toBe(schemaScript(schemaStatements(tables), tables, CREATED_BY));
  });

  it('applied by hand (sqlite3 db < schema.sql), it is a schema a store with createSchema false uses as it is', async () => {
    const path = join(dir, 'by-hand.db');
    const raw = rawConnection(path);
    for (const statement of file.split(';\n').map((s) => s.replace(/^--.*$/gm, '').trim()).filter(Boolean)) await raw.exec(statement);
    raw.close();
    const store = await createSqliteStore({ cluster: 'c', path, createSchema: false, requestTimeoutMs: 2000 });
    stores.push(store);
    expect((await store.create('lock/x', lease)).version).toBe('1');
  });
});

describe("better-sqlite3's native addon", () => {
  it('missing (no prebuilt addon for the platform, none compiled) is PLUGIN_NOT_INSTALLED naming the fix', () => {
    // The error better-sqlite3 itself throws then: a copy of its binding loader in a package with no build/ and no prebuilds/.
    const real = dirname(createRequire(import.meta.url).resolve('better-sqlite3'));
    const copy = join(tempDir(), 'better-sqlite3');
    mkdirSync(join(copy, 'lib'), { recursive: true });
    copyFileSync(join(real, 'binding.js'), join(copy, 'lib', 'binding.js'));
    writeFileSync(join(copy, 'package.json'), JSON.stringify({ name: 'better-sqlite3', type: 'commonjs' }));
    const { getBinding } = createRequire(join(copy, 'lib', 'binding.js'))('./binding.js') as { getBinding: () => unknown };
    let native: unknown;
    try {
      getBinding();
    } catch (err) {
      native = err;
    }
    const err = addonError(native);
    expect(err).toMatchObject({ code: 'PLUGIN_NOT_INSTALLED', key: 'registry.type', backend: 'sqlite', cause: native });
    expect(err?.message).toContain(`no prebuilt addon for ${process.platform}-${process.arch}`);
    expect(err?.message).toContain('Run: npm explore better-sqlite3 -- npm run build-release');
    expect(addonError(new Error('SQLITE_BUSY'))).toBeUndefined();
  });
});

describe('the configuration types', () => {
  // Compiled by `tsc -p tsconfig.json` in this package's test: an @ts-expect-error that stops failing fails the build.
  it('a misspelt type or sqlite key does not compile, and fails at run time too', async () => {
    // @ts-expect-error 'sqlte' is not a registry.type
    await expect(createRegistry({ type: 'sqlte' })).rejects.toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.type' });
    // @ts-expect-error pth is not a key of @rollcall/sqlite's section
    await expect(createRegistry({ type: 'sqlite', sqlite: { pth: join(dir, 'typo.db') } })).rejects.toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.sqlite.pth' });
    // @ts-expect-error another backend's section
    await expect(createRegistry({ type: 'sqlite', etcd: { endpoints: ['http://127.0.0.1:2379'] } })).rejects.toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.etcd.endpoints' });
    const registry = await createRegistry({ type: 'sqlite', sqlite: { path: join(dir, 'typed.db'), busyTimeoutMs: 20 } });
    registries.push(registry);
  });
});
