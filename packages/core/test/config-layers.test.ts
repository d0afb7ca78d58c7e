import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configError } from './support/config-error.js';
import { configFromEnv, configLayers, createRegistry, describeSource, envLayer, ErrorCode, fileLayer, memoryPlugin, resolveOptions, resolveRegistryConfig, type ConfigLayer, type ConfigSource } from '../src/index.js';
import type { OptionSchema, RegistryPlugin } from '../src/spi.js';

const dir = mkdtempSync(join(tmpdir(), 'rollcall-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const memory = memoryPlugin as unknown as RegistryPlugin;

function resolve(source: ConfigSource, plugin: RegistryPlugin = memory) {
  return resolveRegistryConfig(source, plugin, ['memory', 'kubernetes', 'sqlite']);
}

describe('layers: defaults, file, environment, flags', () => {
  // Each key is set by the layers up to one: the highest that sets it wins.
  const path = file('layers.json', { type: 'memory', cluster: 'from-file', election: { leaseDurationMs: 30000, renewDeadlineMs: 20000 }, member: { liveness: 'reaper' } });
  const layers: ConfigLayer[] = [
    { layer: 'default', name: 'command', values: { 'registry.cluster': 'from-default', 'registry.election.leaseDurationMs': 25000, 'registry.maxPayloadBytes': 1000, 'registry.readOnly': true } },
    fileLayer(path),
    envLayer({ REGISTRY_ELECTION_LEASE_DURATION_MS: '40000', REGISTRY_CLUSTER: 'from-env', HOME: '/root' }),
    { layer: 'flag', values: { 'registry.cluster': 'from-flag' } },
  ];

  it('a later layer wins over an earlier one, key by key', () => {
    const { config } = resolve(configLayers(...layers));
    expect(config.cluster).toBe('from-flag');
    expect(config.election).toEqual({ leaseDurationMs: 40000, renewDeadlineMs: 20000, retryPeriodMs: 2000 });
    expect(config.member.liveness).toBe('reaper');
    expect(config.maxPayloadBytes).toBe(1000);
    expect(config.readOnly).toBe(true);
    expect(config.requestTimeoutMs).toBe(5000);
    // Without the flag the environment wins; without both, the file; without all three, the command's default.
    expect(resolve(configLayers(...layers.slice(0, 3))).config.cluster).toBe('from-env');
    expect(resolve(configLayers(...layers.slice(0, 2))).config.cluster).toBe('from-file');
    expect(resolve(configLayers(layers[0]!, { layer: 'code', values: { type: 'memory' } })).config.cluster).toBe('from-default');
  });

  it('reports the layer that set each value: the default, the file by its path, the variable by its name, the flag', () => {
    const { sources } = resolve(configLayers(...layers));
    const source = (key: string) => sources.get(key)?.source;
    expect(source('registry.cluster')).toEqual({ layer: 'flag' });
    expect(source('registry.election.leaseDurationMs')).toEqual({ layer: 'env', name: 'REGISTRY_ELECTION_LEASE_DURATION_MS' });
    expect(source('registry.election.renewDeadlineMs')).toEqual({ layer: 'file', name: path });
    expect(source('registry.type')).toEqual({ layer: 'file', name: path });
    expect(source('registry.maxPayloadBytes')).toEqual({ layer: 'default', name: 'command' });
    expect(source('registry.election.retryPeriodMs')).toEqual({ layer: 'default' });
    expect(source('registry.identity')).toEqual({ layer: 'default' });
    expect(source('registry.memory.name')).toEqual({ layer: 'default' });
    expect(sources.get('registry.election.leaseDurationMs')?.value).toBe(40000);
    expect(describeSource({ layer: 'env', name: 'REGISTRY_CLUSTER' })).toBe('env REGISTRY_CLUSTER');
    expect(describeSource({ layer: 'file', name: path })).toBe(`file ${path}`);
    expect(describeSource({ layer: 'default' })).toBe('default');
    expect(describeSource({ layer: 'default', name: 'command' })).toBe('command');
    expect(describeSource({ layer: 'flag' })).toBe('flag');
  });

  it('the object form given in code is the code layer; configFromEnv is the environment layer', () => {
    expect(resolve({ type: 'memory', cluster: 'orders' }).sources.get('registry.cluster')?.source).toEqual({ layer: 'code' });
    expect(resolve({ 'registry.type': 'memory', 'registry.cluster': 'orders' }).sources.get('registry.cluster')?.source).toEqual({ layer: 'code' });
    expect(resolve(configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_CLUSTER: 'orders' })).sources.get('registry.cluster')?.source).toEqual({ layer: 'env', name: 'REGISTRY_CLUSTER' });
  });

  it('an error names the key, the layer that set it and the rule', () => {
    const fromEnv = configError(() => resolve(configLayers(fileLayer(path), envLayer({ REGISTRY_ELECTION_LEASE_DURATION_MS: '40s' }))));
    expect(fromEnv).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.election.leaseDurationMs' });
    expect(fromEnv.message).toBe('[rollcall] [core] registry.election.leaseDurationMs: expected an integer, got "40s" (from env REGISTRY_ELECTION_LEASE_DURATION_MS)');
    const fromFile = configError(() => resolve(configLayers(fileLayer(file('bad-cluster.json', { type: 'memory', cluster: 'Not_A_Label' })))));
    expect(fromFile.key).toBe('registry.cluster');
    expect(fromFile.message).toContain('is not valid: a DNS-1123 label');
    expect(fromFile.message).toContain(`(from file ${join(dir, 'bad-cluster.json')})`);
    const fromFlag = configError(() => resolve(configLayers({ layer: 'code', values: { type: 'memory' } }, { layer: 'flag', values: { 'registry.member.liveness': 'reaped' } })));
    expect(fromFlag.message).toMatch(/registry\.member\.liveness: must be one of heartbeat, reaper.*\(from flag\)$/);
    // A cross-key rule names the key it blames and where that key's value came from.
    const timing = configError(() => resolve(configLayers({ layer: 'code', values: { type: 'memory' } }, envLayer({ REGISTRY_ELECTION_RENEW_DEADLINE_MS: '20000' }))));
    expect(timing).toMatchObject({ key: 'registry.election.renewDeadlineMs' });
    expect(timing.message).toContain('must be greater than renewDeadlineMs (20000) (from env REGISTRY_ELECTION_RENEW_DEADLINE_MS)');
  });
});

describe('unknown and mistyped keys', () => {
  it('are errors naming the key and its layer, with the key meant when it is a near miss', () => {
    const typo = configError(() => resolve(configLayers({ layer: 'code', values: { type: 'memory' } }, { layer: 'flag', values: { 'registry.clustr': 'x' } })));
    expect(typo).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'registry.clustr' });
    expect(typo.message).toContain('registry.clustr: unknown key; did you mean registry.cluster? (from flag)');
    const nested = configError(() => resolve(configLayers(fileLayer(file('typo.json', { type: 'memory', election: { leaseDuration: 20000 } })))));
    expect(nested.message).toContain('did you mean registry.election.leaseDurationMs?');
    expect(nested.message).toContain(`(from file ${join(dir, 'typo.json')})`);
    const swapped = configError(() => resolve(configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_MEMBER_LIVNESS: 'reaper' })));
    expect(swapped).toMatchObject({ key: 'REGISTRY_MEMBER_LIVNESS' });
    expect(swapped.message).toContain('REGISTRY_MEMBER_LIVNESS: unknown environment variable; did you mean REGISTRY_MEMBER_LIVENESS?');
    // A key of the backend's section given at the top level.
    expect(configError(() => resolve({ 'registry.type': 'memory', 'registry.name': 'x' })).message).toContain('did you mean registry.memory.name?');
  });

  it('with no near miss, the three nearest keys or variables (its own group first), never the whole list', () => {
    const err = configError(() => resolve({ 'registry.type': 'memory', 'registry.election.leaseTime': 'x' }));
    expect(err.message).toMatch(/unknown key; the nearest known keys are registry\.election\.leaseDurationMs, registry\.election\.\w+, registry\.election\.\w+ \(\d+ in all\)/);
    expect(err.message).not.toContain('did you mean');
    expect(err.message).not.toContain('registry.maxPayloadBytes');
    const env = configError(() => resolve(configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_MEMBER_TIMEOUT: '1' })));
    expect(env.message).toMatch(/REGISTRY_MEMBER_TIMEOUT: unknown environment variable; the nearest known variables are REGISTRY_MEMBER_\w+, REGISTRY_MEMBER_\w+, REGISTRY_MEMBER_\w+ \(\d+ in all\)$/);
    expect(env.message.split(', ')).toHaveLength(3);
  });

  it("another backend's key is named as that backend's, not guessed at", () => {
    const err = configError(() => resolve(configLayers({ layer: 'code', values: { type: 'memory' } }, envLayer({ REGISTRY_SQLITE_PATH: 'x.db' }))));
    expect(err.key).toBe('REGISTRY_SQLITE_PATH');
    const flat = configError(() => resolve({ 'registry.type': 'memory', 'registry.sqlite.path': 'x.db' }));
    expect(flat.message).toContain('belongs to registry.type=sqlite');
  });
});

describe('secrets', () => {
  const plugin: RegistryPlugin = {
    type: 'memory',
    options: { apiToken: { type: 'string', doc: 'no secret flag: the name says it', check: () => 'too short' }, password: { type: 'string', secret: true, doc: 'x' }, url: { type: 'string', secret: true, doc: 'the spec says it' } },
    connect: memory.connect,
  };

  it('a value of a key named like a secret never appears in a message, whatever its spec says', () => {
    const err = configError(() => resolve(configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_MEMORY_API_TOKEN: 'tok-sekret-123' }), plugin));
    expect(err).toMatchObject({ key: 'registry.memory.apiToken' });
    expect(err.message).toContain('<secret>');
    expect(err.message).not.toContain('tok-sekret-123');
  });

  it('a secret set twice, beside the environment, is named without either value', () => {
    const err = configError(() => resolve({ ...configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_MEMORY_PASSWORD: 'env-hunter2' }), memory: { password: 'code-hunter2' } } as ConfigSource, plugin));
    expect(err).toMatchObject({ key: 'registry.memory.password' });
    expect(err.message).not.toMatch(/hunter2/);
    const url = configError(() => resolve({ ...configFromEnv({ REGISTRY_TYPE: 'memory', REGISTRY_MEMORY_URL: 'db://u:env-hunter2@h' }), memory: { url: 'db://u:code-hunter2@h' } } as ConfigSource, plugin));
    expect(url).toMatchObject({ key: 'registry.memory.url' });
    expect(url.message).toContain('set twice');
    expect(url.message).not.toMatch(/hunter2/);
  });

  it('a resolved secret is marked, so what shows the configuration masks it', () => {
    const { sources } = resolve({ type: 'memory', memory: { password: 'p' } } as ConfigSource, { ...plugin, options: { password: { type: 'string', secret: true, doc: 'x' } } });
    expect(sources.get('registry.memory.password')).toEqual({ value: 'p', source: { layer: 'code' }, secret: true });
    expect(sources.get('registry.cluster')?.secret).toBeUndefined();
  });
});

describe('a configuration file', () => {
  it('takes the object form, the same under "registry", and the flat form; a null is an absent key', () => {
    for (const content of [{ type: 'memory', cluster: 'orders', identity: null }, { registry: { type: 'memory', cluster: 'orders' } }, { 'registry.type': 'memory', 'registry.cluster': 'orders' }]) {
      expect(resolve(configLayers(fileLayer(file('forms.json', content)))).config.cluster).toBe('orders');
    }
  });

  it('that cannot be read, is not JSON or not an object is INVALID_CONFIG naming the path', () => {
    for (const path of [join(dir, 'missing.json'), file('broken.json', '{ "type": '), file('array.json', '[1]')]) {
      expect(configError(() => fileLayer(path))).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: path });
    }
  });

  it('opens a registry through createRegistry, layers and all', async () => {
    const registry = await createRegistry(configLayers(fileLayer(file('open.json', { type: 'memory', cluster: 'orders' })), { layer: 'flag', values: { 'registry.identity': 'p1' } }));
    try {
      expect([registry.config.cluster, registry.identity]).toEqual(['orders', 'p1']);
    } finally {
      await registry.close();
    }
  });
});

describe('resolveOptions: any schema', () => {
  const schema: OptionSchema = {
    name: { type: 'string', default: 'x', doc: 'name' },
    'limits.total': { type: 'integer', default: 5, min: 1, doc: 'n' },
    'limits.perType': { type: 'map', default: {}, min: 1, doc: 'per type' },
    delayMs: { type: 'number', above: 0, doc: 'ms' },
    callback: { type: 'code', doc: 'fn', check: (v) => (typeof v === 'function' ? undefined : 'a function') },
    clock: { type: 'code', default: { now: () => 0 }, doc: 'a clock' },
  };
  const spec = { prefix: '', schema, backend: 'probe' };

  it('applies defaults, keeps what only code gives as it is, and freezes only the data', () => {
    const clock = { now: () => 1 };
    const { values, sources } = resolveOptions<{ name: string; limits: { total: number; perType: Record<string, number> }; delayMs?: number; clock: object }>(spec, [{ layer: 'code', values: { limits: { perType: { 'a.b': 2 } }, delayMs: 1.5, clock } }]);
    expect(values).toEqual({ name: 'x', limits: { total: 5, perType: { 'a.b': 2 } }, delayMs: 1.5, clock });
    expect(values.clock).toBe(clock);
    expect(Object.isFrozen(values.limits)).toBe(true);
    expect(Object.isFrozen(clock)).toBe(false);
    expect(sources.get('limits.total')?.source).toEqual({ layer: 'default' });
    expect(sources.get('limits.perType')?.source).toEqual({ layer: 'code' });
  });

  it('names the key, inside a map too, and the backend', () => {
    const perType = configError(() => resolveOptions(spec, [{ layer: 'code', values: { limits: { perType: { report: 0 } } } }]));
    expect(perType).toMatchObject({ code: ErrorCode.INVALID_CONFIG, key: 'limits.perType.report' });
    expect(perType.message).toMatch(/^\[rollcall\] \[probe\] limits\.perType\.report: must be at least 1, got 0 \(from code\)$/);
    expect(configError(() => resolveOptions(spec, [{ layer: 'code', values: { delayMs: 0 } }]))).toMatchObject({ key: 'delayMs' });
    expect(configError(() => resolveOptions(spec, [{ layer: 'code', values: { callback: 'not a function' } }]))).toMatchObject({ key: 'callback' });
    expect(configError(() => resolveOptions(spec, [{ layer: 'code', values: { limits: { totl: 3 } } }])).message).toContain('did you mean limits.total?');
  });

  it('a key only code can give is refused from a file or a flag', () => {
    const err = configError(() => resolveOptions(spec, [{ layer: 'flag', values: { callback: 'x' } }]));
    expect(err).toMatchObject({ key: 'callback' });
    expect(err.message).toContain('can only be given in code (from flag)');
  });
});
