import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configError } from './support/config-error.js';
import { configFromEnv, createRegistry, envName, ErrorCode, memoryPlugin, resolveConfig, silentLogger, systemClock, type ConfigSource } from '../src/index.js';
import { loadPlugin, missingPackage, resolvePluginOptions } from '../src/admin.js';
import { pluginContext, type RegistryPlugin } from '../src/spi.js';

// A third-party backend's section, declared as its package would: `probe` becomes a valid `type`.
declare module '../src/index.js' {
  interface RegistryBackendSections {
    probe: { endpoints?: string[]; tls?: { caFile?: string } };
  }
}

const KNOWN = ['memory', 'kubernetes', 'zookeeper', 'etcd', 'mysql', 'sqlite'];

function resolve(source: ConfigSource, plugin: RegistryPlugin = memoryPlugin as unknown as RegistryPlugin) {
  return resolveConfig(source, plugin, KNOWN);
}

describe('configuration', () => {
  it('the object, flat and environment forms are equivalent', () => {
    const object = resolve({ type: 'memory', cluster: 'orders', identity: 'm1', election: { leaseDurationMs: 20000 }, memory: { name: 'shared' } });
    const flat = resolve({ 'registry.type': 'memory', 'registry.cluster': 'orders', 'registry.identity': 'm1', 'registry.election.leaseDurationMs': '20000', 'registry.memory.name': 'shared' });
    const env = resolve(configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_CLUSTER: 'orders', REGISTRY_IDENTITY: 'm1', REGISTRY_ELECTION_LEASE_DURATION_MS: '20000', REGISTRY_MEMORY_NAME: 'shared', HOME: '/root' }));
    expect(flat).toEqual(object);
    expect(env).toEqual(object);
    expect(object.election).toEqual({ leaseDurationMs: 20000, renewDeadlineMs: 10000, retryPeriodMs: 2000 });
    expect(object.options).toEqual({ name: 'shared' });
  });

  it('states every default', () => {
    const config = resolve({ type: 'memory' });
    expect(config.cluster).toBe('default');
    expect(config.election).toEqual({ leaseDurationMs: 15000, renewDeadlineMs: 10000, retryPeriodMs: 2000 });
    expect(config.lock).toEqual({ leaseDurationMs: 15000, renewDeadlineMs: 10000, retryPeriodMs: 2000 });
    expect(config.member).toEqual({ heartbeatIntervalMs: 5000, leaseDurationMs: 20000, renewDeadlineMs: 15000, podRenewDeadlineMs: 0, liveness: 'heartbeat', afterLost: 'reannounce' });
    expect(config.requestTimeoutMs).toBe(5000);
    expect(config.identity).toMatch(/-\d+$/);
  });

  it('is frozen', () => {
    const config = resolve({ type: 'memory' });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.election)).toBe(true);
    expect(Object.isFrozen(config.options)).toBe(true);
  });

  it('names the key of an unknown key in every form', () => {
    // @ts-expect-error the type rejects the typo too; a JavaScript or JSON configuration meets the run-time check
    expect(configError(() => resolve({ type: 'memory', clustr: 'x' }))).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.clustr' });
    expect(configError(() => resolve({ 'registry.type': 'memory', 'registry.election.leaseDuration': '1' }))).toMatchObject({ key: 'registry.election.leaseDuration' });
    expect(configError(() => resolve(configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_NAMESPACE: 'x' })))).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'REGISTRY_NAMESPACE' });
    // @ts-expect-error as above, in the memory section
    expect(configError(() => resolve({ type: 'memory', memory: { nmae: 'x' } }))).toMatchObject({ key: 'registry.memory.nmae' });
  });

  it("rejects another backend's section", () => {
    // @ts-expect-error another backend's section is never in the type either
    const err = configError(() => resolve({ type: 'memory', zookeeper: { connect: 'x' } }));
    expect(err).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.zookeeper.connect' });
    expect(err.message).toContain('registry.type=zookeeper');
  });

  it('rejects wrong types, naming the key', () => {
    expect(configError(() => resolve({ type: 'memory', election: { leaseDurationMs: '15s' as unknown as number } }))).toMatchObject({ key: 'registry.election.leaseDurationMs' });
    expect(configError(() => resolve({ 'registry.type': 'memory', 'registry.requestTimeoutMs': 'soon' }))).toMatchObject({ key: 'registry.requestTimeoutMs' });
    expect(configError(() => resolve({ type: 'memory', cluster: 'Not_A_Label' }))).toMatchObject({ key: 'registry.cluster' });
    expect(configError(() => resolve({ type: 'memory', cluster: 42 as unknown as string }))).toMatchObject({ key: 'registry.cluster' });
    expect(configError(() => resolve({ type: 'memory', member: { heartbeatIntervalMs: -5 } }))).toMatchObject({ key: 'registry.member.heartbeatIntervalMs' });
  });

  it('rejects impossible timings, naming the key and the rule', () => {
    const deadline = configError(() => resolve({ type: 'memory', election: { leaseDurationMs: 10000, renewDeadlineMs: 10000 } }));
    expect(deadline).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.election.renewDeadlineMs' });
    expect(deadline.message).toContain('must be greater than renewDeadlineMs');
    const retry = configError(() => resolve({ type: 'memory', lock: { renewDeadlineMs: 2400, retryPeriodMs: 2000 } }));
    expect(retry).toMatchObject({ key: 'registry.lock.renewDeadlineMs' });
    expect(retry.message).toContain('1.2 x retryPeriodMs');
    const member = configError(() => resolve({ type: 'memory', member: { heartbeatIntervalMs: 15000 } }));
    expect(member).toMatchObject({ key: 'registry.member.leaseDurationMs' });
  });

  it('refuses a duration above one hour, the longest lease a record may declare, naming the key and the bound', () => {
    for (const [section, key] of [['election', 'leaseDurationMs'], ['election', 'renewDeadlineMs'], ['election', 'retryPeriodMs'], ['lock', 'leaseDurationMs'], ['lock', 'renewDeadlineMs'], ['lock', 'retryPeriodMs'], ['member', 'leaseDurationMs'], ['member', 'heartbeatIntervalMs']] as const) {
      const error = configError(() => resolve({ type: 'memory', [section]: { [key]: 3_600_001 } }));
      expect(error, `${section}.${key}`).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: `registry.${section}.${key}` });
      expect(error.message).toContain('3600000');
    }
    expect(() => resolve({ type: 'memory', election: { leaseDurationMs: 3_600_000, renewDeadlineMs: 3_000_000, retryPeriodMs: 60_000 } })).not.toThrow();
  });

  it('a member renew deadline: ¾ of the lease by default; below the lease and above 1.2 heartbeats, else refused naming registry.member.renewDeadlineMs', () => {
    expect(resolve({ type: 'memory', member: { heartbeatIntervalMs: 1000, leaseDurationMs: 4000 } }).member.renewDeadlineMs).toBe(3000);
    // Any timing valid before the deadline existed stays valid: ¾ of a lease of at least two heartbeats is 1.5 heartbeats.
    expect(resolve({ type: 'memory', member: { heartbeatIntervalMs: 5000, leaseDurationMs: 10000 } }).member.renewDeadlineMs).toBe(7500);
    expect(resolve({ 'registry.type': 'memory', 'registry.member.renewDeadlineMs': '12000' }).member.renewDeadlineMs).toBe(12000);
    expect(resolve(configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_MEMBER_AFTER_LOST: 'exit' })).member.afterLost).toBe('exit');
    for (const [member, rule] of [
      [{ renewDeadlineMs: 20000 }, 'leaseDurationMs (20000) must be greater than renewDeadlineMs (20000)'],
      [{ renewDeadlineMs: 25000 }, 'must be greater than renewDeadlineMs'],
      [{ renewDeadlineMs: 6000 }, 'renewDeadlineMs (6000) must be greater than 1.2 x heartbeatIntervalMs (6000)'],
      [{ renewDeadlineMs: 0 }, 'renewDeadlineMs'],
    ] as const) {
      const err = configError(() => resolve({ type: 'memory', member }));
      expect(err).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.member.renewDeadlineMs' });
      expect(err.message).toContain(rule);
    }
    expect(configError(() => resolve({ type: 'memory', member: { afterLost: 'restart' as never } }))).toMatchObject({ key: 'registry.member.afterLost' });
  });

  it('never echoes a secret value', () => {
    const plugin: RegistryPlugin = { type: 'memory', options: { password: { type: 'string', secret: true, doc: 'x', check: () => 'too short' } }, connect: memoryPlugin.connect as never };
    // @ts-expect-error this test's plugin has a key the memory section's type does not
    const err = configError(() => resolve({ type: 'memory', memory: { password: 'hunter2-sekret' } }, plugin));
    expect(err.key).toBe('registry.memory.password');
    expect(err.message).not.toContain('hunter2');
  });

  it('maps camelCase keys to environment names', () => {
    expect(envName('registry.election.leaseDurationMs')).toBe('REGISTRY_ELECTION_LEASE_DURATION_MS');
    expect(envName('registry.kubernetes.namespace')).toBe('REGISTRY_KUBERNETES_NAMESPACE');
  });

  it('requires registry.type', async () => {
    await expect(createRegistry({} as never)).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.type' });
    // @ts-expect-error not a known type; at run time INVALID_CONFIG
    await expect(createRegistry({ type: 'nosuch' })).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.type' });
  });

  it('a mistyped type names the one it most likely meant, and only when one is near', async () => {
    const message = async (type: string) => ((await loadPlugin(type).catch((e: unknown) => e)) as Error).message;
    expect(await message('sqllite')).toContain('registry.type: unknown type "sqllite"; did you mean sqlite? known types are memory, kubernetes, zookeeper, etcd, mysql, postgres, sqlite, migrate');
    expect(await message('Postgress')).toContain('did you mean postgres?');
    expect(await message('consul')).toContain('registry.type: unknown type "consul"; known types are memory');
    expect(await message('consul')).not.toContain('did you mean');
  });

  it('a plugin that is not installed fails with the exact install line: from a checkout while unpublished, and the npm line it becomes', async () => {
    const err = await loadPlugin('kubernetes', { kubernetes: '@rollcall/not-installed-backend' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCode.PLUGIN_NOT_INSTALLED, key: 'registry.type' });
    expect((err as Error).message).toContain(
      'Run: npm --prefix <rollcall checkout> run install-from-checkout -- @rollcall/not-installed-backend   # not on npm yet; published: npm install @rollcall/not-installed-backend',
    );
  });

  it('a plugin whose own dependency is missing is reported as that dependency, not as the plugin', async () => {
    // Laid out as npm would: the importing file's path names the plugin package, which the old check mistook for the missing one.
    const dir = mkdtempSync(join(tmpdir(), 'rollcall-plugin-'));
    const entry = join(dir, 'node_modules', '@rollcall', 'etcd', 'index.js');
    mkdirSync(dirname(entry), { recursive: true });
    writeFileSync(entry, "export { Etcd3 } from 'etcd3-not-installed';\n");
    try {
      const err = await loadPlugin('etcd', { etcd: pathToFileURL(entry).href }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: ErrorCode.PLUGIN_NOT_INSTALLED, key: 'registry.type' });
      expect((err as Error).message).toContain('its dependency etcd3-not-installed is not');
      expect((err as Error).message).toContain('Run: npm install etcd3-not-installed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('missingPackage reads the package out of Node\'s own errors, ESM and CommonJS', async () => {
    const esm = await import('@scope-not-installed/pkg/deep/file.js' as string).catch((e: unknown) => e);
    expect(missingPackage(esm)).toBe('@scope-not-installed/pkg');
    let cjs: unknown;
    try {
      createRequire(import.meta.url)('plain-not-installed/sub');
    } catch (err) {
      cjs = err;
    }
    expect(missingPackage(cjs)).toBe('plain-not-installed');
    const file = await import(pathToFileURL(join(tmpdir(), 'rollcall-no-such-file.js')).href).catch((e: unknown) => e);
    expect(missingPackage(file)).toBeUndefined();
    expect(missingPackage(new Error('boom'))).toBeUndefined();
  });

  it('validates before it contacts anything', async () => {
    let connected = false;
    const plugin: RegistryPlugin = { type: 'probe', options: {}, connect: async () => ((connected = true), undefined as never) };
    await expect(createRegistry({ type: 'probe', election: { renewDeadlineMs: 99999 } }, { plugins: [plugin] })).rejects.toMatchObject({ code: ErrorCode.INVALID_CONFIG });
    expect(connected).toBe(false);
  });
});

describe('options given in code, to a store factory', () => {
  interface ProbeOptions {
    endpoints: readonly string[];
    dialTimeoutMs: number;
    tls?: { caFile?: string; certFile?: string; keyFile?: string };
  }
  const probe: RegistryPlugin<ProbeOptions> = {
    type: 'probe',
    options: {
      endpoints: { type: 'list', default: ['http://127.0.0.1:1'], doc: 'Endpoints.' },
      dialTimeoutMs: { type: 'integer', default: 5000, min: 1, doc: 'Dial timeout, ms.' },
      'tls.caFile': { type: 'string', doc: 'CA file.' },
      'tls.certFile': { type: 'string', doc: 'Certificate file.' },
      'tls.keyFile': { type: 'string', doc: 'Key file.' },
    },
    validate: (o) => (o.tls?.certFile !== undefined && o.tls.keyFile === undefined ? { key: 'tls.keyFile', rule: 'is required with tls.certFile' } : undefined),
    connect: async () => undefined as never,
  };

  it('resolves exactly as the object form of the configuration does', () => {
    const input = { endpoints: ['http://a:1', 'http://b:2'], tls: { caFile: '/ca.pem' } };
    const viaConfig = resolveConfig({ type: 'probe', probe: input }, probe as unknown as RegistryPlugin).options;
    const direct = resolvePluginOptions(probe, input);
    expect(direct).toEqual(viaConfig);
    expect(direct).toEqual({ endpoints: ['http://a:1', 'http://b:2'], dialTimeoutMs: 5000, tls: { caFile: '/ca.pem' } });
    expect(Object.isFrozen(direct) && Object.isFrozen(direct.tls)).toBe(true);
  });

  it('names the flat key of an unknown key, a wrong type and a broken cross-key rule', () => {
    expect(configError(() => resolvePluginOptions(probe, { hosts: [] } as never))).toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.probe.hosts' });
    expect(configError(() => resolvePluginOptions(probe, { dialTimeoutMs: 0 }))).toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.probe.dialTimeoutMs' });
    expect(configError(() => resolvePluginOptions(probe, { tls: { certFile: '/c.pem' } }))).toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.probe.tls.keyFile' });
  });

  it('gives connect the core defaults and checks the cluster and request timeout by the core rules', () => {
    const context = pluginContext(probe, { endpoints: ['http://a:1'] });
    expect(context).toMatchObject({ cluster: 'default', requestTimeoutMs: 5000, logger: silentLogger, clock: systemClock });
    expect(context.options.endpoints).toEqual(['http://a:1']);
    expect(configError(() => pluginContext(probe, { cluster: 'Not_A_Label' }))).toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.cluster' });
    expect(configError(() => pluginContext(probe, { requestTimeoutMs: 0 }))).toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.requestTimeoutMs' });
  });
});

describe('registry.member.liveness', () => {
  it('defaults to heartbeat; reaper in each form; any other value is INVALID_CONFIG naming the key', () => {
    expect(resolve({ type: 'memory' }).member).toEqual({ heartbeatIntervalMs: 5000, leaseDurationMs: 20000, renewDeadlineMs: 15000, podRenewDeadlineMs: 0, liveness: 'heartbeat', afterLost: 'reannounce' });
    expect(resolve({ type: 'memory', member: { liveness: 'reaper' } }).member.liveness).toBe('reaper');
    expect(resolve({ 'registry.type': 'memory', 'registry.member.liveness': 'reaper' }).member.liveness).toBe('reaper');
    expect(resolve(configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_MEMBER_LIVENESS: 'reaper' })).member.liveness).toBe('reaper');
    for (const source of [
      { type: 'memory', member: { liveness: 'reaped' } },
      { type: 'memory', member: { liveness: 1 } },
      { 'registry.type': 'memory', 'registry.member.liveness': '' },
      configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_MEMBER_LIVENESS: 'Reaper' }),
    ] as ConfigSource[]) {
      const err = configError(() => resolve(source));
      expect(err.code).toBe(ErrorCode.INVALID_CONFIG);
      expect(err.key).toBe('registry.member.liveness');
      expect(err.message).toContain('heartbeat, reaper');
    }
  });
});

describe('the environment form with keys spread beside it', () => {
  it('createRegistry({ ...configFromEnv(env), cluster, identity }) runs with the explicit keys and the environment\'s', async () => {
    const env = { REGISTRY_TYPE: 'memory', REGISTRY_ELECTION_LEASE_DURATION_MS: '20000' };
    const registry = await createRegistry({ ...configFromEnv(env), cluster: 'orders', identity: 'p1' });
    try {
      expect(registry.identity).toBe('p1');
    } finally {
      await registry.close();
    }
    const resolved = resolve({ ...configFromEnv(env), cluster: 'orders', identity: 'p1' });
    expect([resolved.cluster, resolved.identity, resolved.election.leaseDurationMs]).toEqual(['orders', 'p1', 20000]);
    // The flat form beside it, too.
    expect(resolve({ ...configFromEnv(env), 'registry.cluster': 'orders' }).cluster).toBe('orders');
  });

  it('a key set both ways to one value is that value', () => {
    const env = configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_CLUSTER: 'orders', REGISTRY_ELECTION_LEASE_DURATION_MS: '20000' });
    const resolved = resolve({ ...env, type: 'memory', cluster: 'orders', election: { leaseDurationMs: 20000 } });
    expect([resolved.cluster, resolved.election.leaseDurationMs]).toEqual(['orders', 20000]);
  });

  it('a key set both ways to two values is INVALID_CONFIG naming it, whichever order the spread was written in', () => {
    const env = configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_CLUSTER: 'payments' });
    for (const source of [{ ...env, cluster: 'orders' }, { cluster: 'orders', ...env }]) {
      const err = configError(() => resolve(source));
      expect(err).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.cluster' });
      expect(err.message).toContain('"orders"');
      expect(err.message).toContain('REGISTRY_CLUSTER');
      expect(err.message).toContain('"payments"');
    }
    expect(configError(() => resolve({ ...configFromEnv({ REGISTRY_TYPE: 'memory' }), type: 'sqlite' } as ConfigSource))).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.type' });
    expect(configError(() => resolve({ ...configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_MEMORY_NAME: 'a' }), memory: { name: 'b' } }))).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.memory.name' });
  });
});

describe('a plugin made of others (compose)', () => {
  // Core knows no such plugin by name: it hands `compose` the section as written and a loader, and validates what comes back.
  const loaded: string[] = [];
  const wrapper: RegistryPlugin = {
    type: 'wrap',
    options: {},
    async compose({ read, loadPlugin }) {
      const innerType = read('inner.type');
      const inner = await loadPlugin(String(innerType), 'registry.wrap.inner.type');
      loaded.push(inner.type);
      const options: Record<string, RegistryPlugin['options'][string]> = { 'inner.type': { type: 'enum', values: [inner.type], required: true, doc: 'The wrapped backend.' } };
      for (const [key, spec] of Object.entries(inner.options)) options[`inner.${inner.type}.${key}`] = spec;
      return {
        type: 'wrap',
        options,
        connect: (context) => {
          const section = (context.options.inner as Record<string, unknown>)[inner.type] as Readonly<Record<string, unknown>>;
          return inner.connect({ ...context, options: section });
        },
      };
    },
    connect: () => Promise.reject(new Error('composed before it connects')),
  };

  it('is composed before validation, so the environment form names the keys of the plugins it loads', async () => {
    const registry = await createRegistry(configFromEnv({ REGISTRY_TYPE: 'wrap', REGISTRY_WRAP_INNER_TYPE: 'memory', REGISTRY_WRAP_INNER_MEMORY_NAME: 'wrapped' }), { plugins: [wrapper] });
    try {
      expect(loaded).toEqual(['memory']);
      expect(registry.config.options).toEqual({ inner: { type: 'memory', memory: { name: 'wrapped' } } });
      expect(registry.backend).toBe('memory');
    } finally {
      await registry.close();
    }
  });

  it('a type it cannot load, and a key of the loaded plugin misspelt, are INVALID_CONFIG naming the key', async () => {
    const unknown = await createRegistry({ 'registry.type': 'wrap', 'registry.wrap.inner.type': 'consul' }, { plugins: [wrapper] }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.wrap.inner.type' });
    const misspelt = await createRegistry({ 'registry.type': 'wrap', 'registry.wrap.inner.type': 'memory', 'registry.wrap.inner.memory.nmae': 'x' }, { plugins: [wrapper] }).catch((e: unknown) => e);
    expect(misspelt).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.wrap.inner.memory.nmae' });
  });
});
