import { afterEach, describe, expect, it } from 'vitest';
import { configFromEnv, createRegistry, type Registry } from '@rollcall/core';
import { resolvePluginOptions } from '@rollcall/core/admin';
import type { SqlRecordStore } from '@rollcall/sql';
import { createPostgresStore, postgresConnection, registryPlugin, type PostgresOptions } from '../src/index.js';
import { postgres, testSchema } from './support/postgres.js';

const schema = testSchema('url');
const stores: SqlRecordStore[] = [];
const registries: Registry[] = [];
afterEach(async () => {
  await Promise.allSettled(registries.splice(0).map((r) => r.close()));
  await Promise.allSettled(stores.splice(0).map((s) => s.close()));
});

let prefixes = 0;
const prefix = () => `u${process.pid}_${prefixes++}_`;

/** The test server as a connection string, the password percent-encoded. */
function testUrl(): string {
  const env = postgres();
  return `postgres://${encodeURIComponent(env.user)}:${encodeURIComponent(env.password)}@${env.host}:${env.port}/${env.database}`;
}

/** The INVALID_CONFIG error of resolving `section`, or a failed test if it resolved. */
function configError(section: Record<string, unknown>): Error & { code: string; key?: string } {
  try {
    resolvePluginOptions(registryPlugin, section as never);
  } catch (err) {
    return err as Error & { code: string; key?: string };
  }
  throw new Error('resolved, but an error was expected');
}

describe('postgres: the url key', () => {
  it('gives host, port, user, password and database, percent-decoded; the keys it does not hold keep their defaults', () => {
    const options = resolvePluginOptions(registryPlugin, { url: 'postgresql://app%40x:p%2Fw%3Ad@db.example:6543/orders' }) as PostgresOptions;
    expect(postgresConnection(options)).toEqual({ host: 'db.example', port: 6543, user: 'app@x', password: 'p/w:d', database: 'orders' });
    expect(options.schema).toBe('public');
    const partial = resolvePluginOptions(registryPlugin, { url: 'postgres:///orders', user: 'app' }) as PostgresOptions;
    expect(postgresConnection(partial)).toEqual({ host: 'localhost', port: 5432, user: 'app', password: '', database: 'orders' });
  });

  it.each([
    ['host', { host: 'other' }],
    ['port', { port: 5433 }],
    ['user', { user: 'other' }],
    ['password', { password: 'other' }],
    ['database', { database: 'other' }],
  ])('%s given in the url and as its own key is INVALID_CONFIG naming both', (key, extra) => {
    const err = configError({ url: 'postgres://app:s3cret-in-url@db.example:6543/orders', ...extra });
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe(`registry.postgres.${key}`);
    expect(err.message).toContain('registry.postgres.url');
    expect(err.message).toContain(`registry.postgres.${key}`);
    expect(err.message).not.toContain('s3cret-in-url');
  });

  it.each([
    ['not a URL', 'app s3cret-in-url db.example', /is not a URL/],
    ['no scheme', 's3cret-in-url:5432', /must start with postgres:\/\//],
    ['another scheme', 'mysql://app:s3cret-in-url@db/orders', /must start with postgres:\/\//],
    ['query parameters', 'postgres://app:s3cret-in-url@db/orders?sslmode=require', /query parameters are not read/],
    ['a path of two names', 'postgres://app:s3cret-in-url@db/orders/x', /one database name/],
    ['a database name that needs quoting', 'postgres://app:s3cret-in-url@db/Orders', /database name is not valid/],
  ])('%s is INVALID_CONFIG naming registry.postgres.url, without its text', (_case, url, rule) => {
    const err = configError({ url });
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.postgres.url');
    expect(err.message).toMatch(rule);
    expect(err.message).not.toContain('s3cret-in-url');
  });

  it('without user or database, in the url or as keys, is INVALID_CONFIG naming the missing key', () => {
    expect(configError({ url: 'postgres://db.example/orders' }).key).toBe('registry.postgres.user');
    expect(configError({ url: 'postgres://app@db.example' }).key).toBe('registry.postgres.database');
    expect(configError({}).key).toBe('registry.postgres.user');
  });

  it('connects to the test server', async () => {
    const store = await createPostgresStore({ cluster: 'c1', url: testUrl(), schema: schema.name, tablePrefix: prefix(), requestTimeoutMs: 2000 });
    stores.push(store);
    await store.create('lock/x', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 });
    expect((await store.get('lock/x'))?.record.holderIdentity).toBe('a');
  });

  it('the environment form: REGISTRY_POSTGRES_URL connects, and a key given again beside it is refused', async () => {
    const base = { REGISTRY_TYPE: 'postgres', REGISTRY_CLUSTER: 'envurl', REGISTRY_POSTGRES_URL: testUrl(), REGISTRY_POSTGRES_SCHEMA: schema.name };
    const registry = await createRegistry(configFromEnv({ ...base, REGISTRY_POSTGRES_TABLE_PREFIX: prefix() }));
    registries.push(registry);
    expect(registry.state).toBe('connected');
    const err = await createRegistry(configFromEnv({ ...base, REGISTRY_POSTGRES_HOST: postgres().host })).then(
      (r) => (registries.push(r), undefined),
      (e: Error & { code: string; key?: string }) => e,
    );
    expect(err?.code).toBe('INVALID_CONFIG');
    expect(err?.key).toBe('registry.postgres.host');
    expect(err?.message).not.toContain(postgres().password);
  });
});
