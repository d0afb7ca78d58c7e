import { describe, expect, it } from 'vitest';
import { configFromEnv, createRegistry, ErrorCode, memoryPlugin, resolveConfig, type ConfigSource, type Registry } from '@rollcall/core';
import { loadPlugin, PLUGIN_PACKAGES, registryStore } from '@rollcall/core/admin';
import type { RegistryPlugin } from '@rollcall/core/spi';
// The package as core loads it for registry.type=migrate (its dist), beside this checkout's source.
import { MigrateStore as LoadedMigrateStore } from '@rollcall/migrate';
import { migratePlugin, type MigrateStore } from '../src/index.js';

async function configError(source: ConfigSource): Promise<{ code: string; key: string | undefined; message: string }> {
  let registry: Registry | undefined;
  try {
    registry = await createRegistry(source);
  } catch (err) {
    return err as { code: string; key: string | undefined; message: string };
  }
  await registry.close();
  throw new Error('expected a configuration error');
}

/** A third-party backend: no location keys known to core, so its whole section says where it is. */
const thirdParty: RegistryPlugin = {
  type: 'acme',
  options: { url: { type: 'string', required: true, doc: 'Where.' }, timeoutMs: { type: 'integer', default: 10, doc: 'How long.' } },
  connect: () => Promise.reject(new Error('not in this test')),
};

describe('registry.type=migrate configuration', () => {
  it('the object, flat and environment forms are equivalent, and connect both sides', async () => {
    const object = { type: 'migrate', cluster: 'orders', identity: 'm1', migrate: { from: { type: 'memory', memory: { name: 'old' } }, to: { type: 'memory', memory: { name: 'new' } } } };
    const flat = { 'registry.type': 'migrate', 'registry.cluster': 'orders', 'registry.identity': 'm1', 'registry.migrate.from.type': 'memory', 'registry.migrate.from.memory.name': 'old', 'registry.migrate.to.type': 'memory', 'registry.migrate.to.memory.name': 'new' };
    const env = configFromEnv({ REGISTRY_TYPE: 'migrate', REGISTRY_CLUSTER: 'orders', REGISTRY_IDENTITY: 'm1', REGISTRY_MIGRATE_FROM_TYPE: 'memory', REGISTRY_MIGRATE_FROM_MEMORY_NAME: 'old', REGISTRY_MIGRATE_TO_TYPE: 'memory', REGISTRY_MIGRATE_TO_MEMORY_NAME: 'new' });
    const configs = [];
    for (const source of [object, flat, env] as ConfigSource[]) {
      const registry = await createRegistry(source);
      configs.push(registry.config);
      const store = registryStore(registry);
      expect(store).toBeInstanceOf(LoadedMigrateStore);
      expect([(store as MigrateStore).from.backend, (store as MigrateStore).to.backend]).toEqual(['memory', 'memory']);
      expect(registry.backend).toBe('migrate');
      await registry.close();
    }
    expect(configs[1]).toEqual(configs[0]);
    expect(configs[2]).toEqual(configs[0]);
    expect(configs[0]!.options).toEqual({ from: { type: 'memory', memory: { name: 'old' } }, to: { type: 'memory', memory: { name: 'new' } } });
  });

  it('a migrate naming itself on either side is INVALID_CONFIG naming the key', async () => {
    for (const side of ['from', 'to']) {
      const other = side === 'from' ? 'to' : 'from';
      const err = await configError({ 'registry.type': 'migrate', [`registry.migrate.${side}.type`]: 'migrate', [`registry.migrate.${other}.type`]: 'memory' });
      expect(err.code).toBe(ErrorCode.INVALID_CONFIG);
      expect(err.key).toBe(`registry.migrate.${side}.type`);
    }
  });

  it('a nested migrate section is INVALID_CONFIG naming its key', async () => {
    const err = await configError({ type: 'migrate', migrate: { from: { type: 'memory', migrate: { from: { type: 'memory' } } }, to: { type: 'memory', memory: { name: 'b' } } } });
    expect(err.code).toBe(ErrorCode.INVALID_CONFIG);
    expect(err.key).toBe('registry.migrate.from.migrate.from.type');
  });

  it('a missing side, an unknown type and a key of the other type are INVALID_CONFIG naming the key', async () => {
    // @ts-expect-error a migration needs both sides; the object form says so at compile time, the others at run time
    expect(await configError({ type: 'migrate', migrate: { from: { type: 'memory' } } })).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.migrate.to.type' });
    expect(await configError(configFromEnv({ REGISTRY_TYPE: 'migrate', REGISTRY_MIGRATE_FROM_TYPE: 'memory', REGISTRY_MIGRATE_TO_TYPE: 'consul' }))).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.migrate.to.type' });
    const err = await configError({ type: 'migrate', migrate: { from: { type: 'memory', memory: { name: 'a' } }, to: { type: 'memory', memory: { name: 'b', nmae: 'c' } } } });
    expect(err).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.migrate.to.memory.nmae' });
    const env = await configError(configFromEnv({ REGISTRY_TYPE: 'migrate', REGISTRY_MIGRATE_FROM_TYPE: 'memory', REGISTRY_MIGRATE_TO_TYPE: 'memory', REGISTRY_MIGRATE_TO_MEMORY_NAME: 'b', REGISTRY_MIGRATE_TO_ETCD_ENDPOINTS: 'x' }));
    expect(env).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'REGISTRY_MIGRATE_TO_ETCD_ENDPOINTS' });
  });

  it('the same backend twice (same type, same location) is INVALID_CONFIG naming registry.migrate.to', async () => {
    const same = await configError({ type: 'migrate', migrate: { from: { type: 'memory', memory: { name: 'a' } }, to: { type: 'memory', memory: { name: 'a' } } } });
    expect(same).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.migrate.to' });
    expect(same.message).toContain('the same memory location, as its plugin judges it');
    // Defaults count: both sides on the default memory backend are one backend.
    expect(await configError({ type: 'migrate', migrate: { from: { type: 'memory' }, to: { type: 'memory' } } })).toMatchObject({ key: 'registry.migrate.to' });
    // A type core does not know: the same section is the same backend; a different one is not.
    const acme = migratePlugin(thirdParty, thirdParty) as unknown as RegistryPlugin;
    const resolve = (url: string, timeoutMs: number) => resolveConfig({ type: 'migrate', migrate: { from: { type: 'acme', acme: { url: 'u1', timeoutMs: 10 } }, to: { type: 'acme', acme: { url, timeoutMs } } } }, acme);
    expect(() => resolve('u1', 10)).toThrow(/registry\.migrate\.to: names the same backend/);
    expect(resolve('u2', 10).options).toMatchObject({ to: { acme: { url: 'u2' } } });
    expect(resolve('u1', 20).options).toMatchObject({ to: { acme: { timeoutMs: 20 } } });
    // A plugin that says where its records live decides: the same url is the same backend whatever the timeout.
    const located: RegistryPlugin = { ...thirdParty, sameLocation: (a, b) => a.url === b.url };
    const resolveLocated = (url: string, timeoutMs: number) =>
      resolveConfig({ type: 'migrate', migrate: { from: { type: 'acme', acme: { url: 'u1', timeoutMs: 10 } }, to: { type: 'acme', acme: { url, timeoutMs } } } }, migratePlugin(located, located) as unknown as RegistryPlugin);
    expect(() => resolveLocated('u1', 20)).toThrow(/registry\.migrate\.to: names the same backend .*the same acme location/);
    expect(resolveLocated('u2', 10).options).toMatchObject({ to: { acme: { url: 'u2' } } });
  });

  it('without @rollcall/migrate installed, registry.type=migrate is PLUGIN_NOT_INSTALLED with the npm install line', async () => {
    // Core knows the type and its package, and imports it only when chosen: what it says when the import finds nothing.
    expect(PLUGIN_PACKAGES.migrate).toBe('@rollcall/migrate');
    const err = await loadPlugin('migrate', { migrate: '@rollcall/migrate-not-installed' }).then(() => undefined, (e: unknown) => e);
    expect(err).toMatchObject({ code: 'PLUGIN_NOT_INSTALLED', key: 'registry.type' });
    expect((err as Error).message).toContain('npm install @rollcall/migrate-not-installed');
  });

  it('each side’s own rules apply, named under its side', async () => {
    const strict: RegistryPlugin = { ...thirdParty, validate: (o) => ((o as { timeoutMs: number }).timeoutMs > 100 ? { key: 'timeoutMs', rule: 'at most 100' } : undefined) };
    const plugin = migratePlugin(memoryPlugin as unknown as RegistryPlugin, strict) as unknown as RegistryPlugin;
    expect(() => resolveConfig({ type: 'migrate', migrate: { from: { type: 'memory' }, to: { type: 'acme', acme: { url: 'u', timeoutMs: 500 } } } }, plugin)).toThrow(/registry\.migrate\.to\.acme\.timeoutMs: at most 100/);
  });
});
