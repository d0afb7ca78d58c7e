import { hostname } from 'node:os';
import { ConfigurationError } from '../errors.js';
import { MEMBER_LIVENESS_MODES, type MemberConfig } from '../member-liveness.js';
import { IDENTITY_RULE, isValidIdentity } from '../names.js';
import type { RegistryPlugin } from '../plugin.js';
import { DEFAULT_LEASE_TIMING, DEFAULT_MEMBER_TIMING, leaseTimingProblem, memberTimingProblem, type LeaseTiming } from '../timing.js';
import type { BackendSection, RegistryType } from './backend-sections.js';
import { deepFreeze, envName, flattenObject, resolveSection, type OptionSchema } from './option-schema.js';
import { resolvePluginSection, STORE_RUNTIME_OPTIONS } from './plugin-options.js';

/** The keys of the object form every backend shares; each has a default. */
// A type, not an interface: it stays assignable to Record<string, unknown>.
export type CoreConfigInput = {
  /** The cluster: a namespace of records within the backend, a DNS-1123 label. Default `default`. */
  cluster?: string;
  /** This process's identity, the holderIdentity of its leases. Default `<hostname>-<pid>`. */
  identity?: string;
  /** Election timings. Defaults 15000 / 10000 / 2000 ms. */
  election?: Partial<LeaseTiming>;
  /** Lock timings. Defaults 15000 / 10000 / 2000 ms. */
  lock?: Partial<LeaseTiming>;
  /** Member heartbeat timings (defaults 5000 / 20000 ms) and liveness mode (default `heartbeat`). */
  member?: Partial<MemberConfig>;
  /** Bound on every single backend call, milliseconds. Default 5000. */
  requestTimeoutMs?: number;
  /** Largest member payload, bytes of UTF-8 JSON; the store's own limit applies when smaller. Default 65536. */
  maxPayloadBytes?: number;
  /**
   * Only look: the registry writes nothing to the backend — no member, election
   * or lock (those calls reject with PERMISSION_DENIED), no delete of an
   * expired record, no reaper campaign, no schema, purge or label — and still
   * judges liveness as its mode does. For dashboards, `rollcall` read commands
   * and identities that may only read. Default false.
   */
  readOnly?: boolean;
};

/**
 * The object form for one backend: `type`, the shared keys, and that backend's
 * section (typed by its package, see {@link RegistryBackendSections}); another
 * backend's section is an error, as at run time.
 */
export type BackendConfigInput<T extends RegistryType> = CoreConfigInput & {
  /** The backend. Required. */
  type: T;
} & { [K in T]?: BackendSection<K> } & { [K in Exclude<RegistryType, T>]?: never };

/**
 * The object form of the configuration: `type` one of the known backends
 * ({@link RegistryType}), so `{ type: 'sqlte' }` does not compile; every other
 * key has a default.
 */
export type RegistryConfigInput = { [T in RegistryType]: BackendConfigInput<T> }[RegistryType];

/** The flat form: `{ 'registry.type': 'kubernetes', 'registry.kubernetes.namespace': 'prod' }`. Values may be strings. */
export type FlatRegistryConfig = Readonly<Record<`registry.${string}`, string | number | boolean | readonly string[]>>;

const ENV_SOURCE = Symbol('rollcall.env');

/** The environment form, made by {@link configFromEnv}. */
export interface EnvRegistryConfig {
  readonly [ENV_SOURCE]: Readonly<Record<string, string | undefined>>;
}

export type ConfigSource = RegistryConfigInput | FlatRegistryConfig | EnvRegistryConfig;

/**
 * Reads the environment form: every `REGISTRY_*` variable, e.g.
 * `REGISTRY_TYPE=kubernetes`. Unknown ones are errors at construction. Keys
 * may be spread beside it, `{ ...configFromEnv(), cluster: 'orders' }`: they
 * join the variables, and a key set both ways to two values is INVALID_CONFIG
 * naming it (never one dropped in silence).
 */
export function configFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): EnvRegistryConfig {
  const picked: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (name.startsWith('REGISTRY_') && value !== undefined) picked[name] = value;
  return { [ENV_SOURCE]: Object.freeze(picked) };
}

/** The validated, frozen configuration a registry runs with. */
export interface RegistryConfig {
  readonly type: string;
  readonly cluster: string;
  readonly identity: string;
  readonly election: Readonly<LeaseTiming>;
  readonly lock: Readonly<LeaseTiming>;
  readonly member: Readonly<MemberConfig>;
  readonly requestTimeoutMs: number;
  readonly maxPayloadBytes: number;
  /** Writes nothing to the backend (see {@link CoreConfigInput.readOnly}). */
  readonly readOnly: boolean;
  /** The backend's section, validated by its plugin. */
  readonly options: Readonly<Record<string, unknown>>;
}

function defaultIdentity(): string {
  const host = hostname().replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '') || 'host';
  return `${host}-${process.pid}`;
}

/** The core keys, relative to `registry.`. */
export const CORE_OPTIONS: OptionSchema = Object.freeze({
  type: { type: 'string', required: true, doc: 'The backend plugin.' },
  cluster: STORE_RUNTIME_OPTIONS.cluster,
  identity: { type: 'string', doc: 'Holder identity of this process. Default <hostname>-<pid>.', check: (v) => (isValidIdentity(v) ? undefined : IDENTITY_RULE) },
  'election.leaseDurationMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.leaseDurationMs, min: 1000, doc: 'Election lease, ms.' },
  'election.renewDeadlineMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.renewDeadlineMs, min: 1, doc: 'Election renew deadline, ms.' },
  'election.retryPeriodMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.retryPeriodMs, min: 1, doc: 'Election retry period, ms.' },
  'lock.leaseDurationMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.leaseDurationMs, min: 1000, doc: 'Lock lease, ms.' },
  'lock.renewDeadlineMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.renewDeadlineMs, min: 1, doc: 'Lock renew deadline, ms.' },
  'lock.retryPeriodMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.retryPeriodMs, min: 1, doc: 'Lock retry period, ms.' },
  'member.heartbeatIntervalMs': { type: 'integer', default: DEFAULT_MEMBER_TIMING.heartbeatIntervalMs, min: 1, doc: 'Heartbeat interval, ms.' },
  'member.leaseDurationMs': { type: 'integer', default: DEFAULT_MEMBER_TIMING.leaseDurationMs, min: 1000, doc: 'Member lease, ms.' },
  'member.liveness': {
    type: 'enum',
    values: MEMBER_LIVENESS_MODES,
    default: 'heartbeat',
    doc: 'How member liveness reaches peers: heartbeat (each heartbeat rewrites the member record, every reader of the role receives it), reaper (heartbeats renew heartbeat/<role>/<id>, read by one elected reaper per role; readers receive joins, payload changes and removals only) or pod (a member in a pod is alive while its pod is Ready; no heartbeat writes; needs a backend with pod readiness: kubernetes).',
  },
  requestTimeoutMs: STORE_RUNTIME_OPTIONS.requestTimeoutMs,
  maxPayloadBytes: { type: 'integer', default: 65536, min: 1, doc: 'Largest member payload, bytes.' },
  readOnly: { type: 'boolean', default: false, doc: 'Write nothing to the backend: read and judge liveness only (announce, campaign and lock are refused).' },
});

function isEnvSource(source: ConfigSource): source is EnvRegistryConfig {
  return typeof source === 'object' && source !== null && ENV_SOURCE in source;
}

/** Flattens any of the three forms to `registry.*` keys. Environment names stay as they are until the schema is known. */
function flatten(source: ConfigSource): { flat: Map<string, unknown>; env: Map<string, string> } {
  const flat = new Map<string, unknown>();
  const env = new Map<string, string>();
  if (typeof source !== 'object' || source === null) throw new ConfigurationError('the configuration must be an object', { key: 'registry' });
  // Keys beside the environment (`{ ...configFromEnv(), cluster: 'orders' }`) are the object or flat form; resolveConfig refuses a key given both ways with two values.
  const keys = Object.keys(source);
  if (keys.length > 0 && keys.every((k) => k.startsWith('registry.'))) {
    for (const [k, v] of Object.entries(source)) flat.set(k, v);
  } else {
    flattenObject('registry.', source as Record<string, unknown>, flat);
  }
  if (isEnvSource(source)) {
    for (const [name, value] of Object.entries(source[ENV_SOURCE])) if (value !== undefined) env.set(name, value);
    const type = env.get('REGISTRY_TYPE');
    if (type !== undefined) {
      assertOneValue('registry.type', flat.get('registry.type'), 'REGISTRY_TYPE', type);
      flat.set('registry.type', type);
    }
  }
  return { flat, env };
}

/**
 * A key set both beside `configFromEnv()` and by its variable must have one
 * value: which should win cannot be read from a spread (symbol keys come after
 * string keys whatever the order written), and dropping either in silence
 * could put a process in another cluster.
 */
function assertOneValue(key: string, given: unknown, name: string, fromEnv: string): void {
  if (given === undefined || String(Array.isArray(given) ? given.join(',') : given) === fromEnv) return;
  throw new ConfigurationError(
    `${key}: set twice, to ${JSON.stringify(given)} beside configFromEnv() and to ${JSON.stringify(fromEnv)} by ${name} in the environment; give it in one place (remove the key, or unset the variable)`,
    { key },
  );
}

/** Reads `registry.type` from any form, to know which plugin to load. @internal */
export function configType(source: ConfigSource): string {
  const type = flatten(source).flat.get('registry.type');
  if (type === undefined) throw new ConfigurationError('registry.type: is required (REGISTRY_TYPE in the environment form)', { key: 'registry.type' });
  if (typeof type !== 'string' || type === '') throw new ConfigurationError(`registry.type: expected a non-empty string, got ${JSON.stringify(type)}`, { key: 'registry.type' });
  return type;
}

/** Reads one key from any form as given, before validation: for a plugin that composes others (see `RegistryPlugin.compose`). @internal */
export function configReader(source: ConfigSource): (key: string) => unknown {
  const { flat, env } = flatten(source);
  return (key) => flat.get(key) ?? env.get(envName(key));
}

/**
 * Validates a configuration in any of its three forms against the core keys and
 * the plugin's section. Unknown keys, wrong types and impossible timings throw
 * INVALID_CONFIG naming the key and the rule; so does a `registry.type` other
 * than the plugin's. The result is frozen.
 */
export function resolveConfig(source: ConfigSource, plugin: RegistryPlugin, otherTypes: readonly string[] = []): RegistryConfig {
  const { flat, env } = flatten(source);
  const type = flat.get('registry.type');
  if (type !== undefined && type !== plugin.type) throw new ConfigurationError(`registry.type: ${JSON.stringify(type)} is not the plugin's type ${JSON.stringify(plugin.type)}`, { key: 'registry.type' });
  const sectionPrefix = `registry.${plugin.type}.`;
  if (env.size > 0) {
    const known = new Map<string, string>();
    for (const key of Object.keys(CORE_OPTIONS)) known.set(envName(`registry.${key}`), `registry.${key}`);
    for (const key of Object.keys(plugin.options)) known.set(envName(`${sectionPrefix}${key}`), `${sectionPrefix}${key}`);
    for (const [name, value] of env) {
      const key = known.get(name);
      if (!key) throw new ConfigurationError(`${name}: unknown environment variable; known ones are ${[...known.keys()].join(', ')}`, { key: name });
      assertOneValue(key, flat.get(key), name, value);
      flat.set(key, value);
    }
  }
  const core = new Map<string, unknown>();
  const section = new Map<string, unknown>();
  for (const [key, value] of flat) {
    if (!key.startsWith('registry.')) throw new ConfigurationError(`${key}: unknown key; every key starts with registry.`, { key });
    if (key.startsWith(sectionPrefix)) section.set(key.slice(sectionPrefix.length), value);
    else {
      const other = otherTypes.find((t) => t !== plugin.type && key.startsWith(`registry.${t}.`));
      if (other) throw new ConfigurationError(`${key}: belongs to registry.type=${other}, but registry.type is ${plugin.type}`, { key });
      core.set(key.slice('registry.'.length), value);
    }
  }
  const base = resolveSection('registry.', CORE_OPTIONS, core) as unknown as Omit<RegistryConfig, 'identity' | 'options'> & { identity?: string };
  const options = resolvePluginSection(plugin, section);
  const config = {
    type: base.type,
    cluster: base.cluster,
    identity: base.identity ?? defaultIdentity(),
    election: base.election,
    lock: base.lock,
    member: base.member,
    requestTimeoutMs: base.requestTimeoutMs,
    maxPayloadBytes: base.maxPayloadBytes,
    readOnly: base.readOnly,
    options,
  } as RegistryConfig;
  for (const kind of ['election', 'lock'] as const) {
    const problem = leaseTimingProblem(config[kind]);
    if (problem) throw new ConfigurationError(`registry.${kind}.${problem.key}: ${problem.rule}`, { key: `registry.${kind}.${problem.key}` });
  }
  const memberProblem = memberTimingProblem(config.member);
  if (memberProblem) throw new ConfigurationError(`registry.member.${memberProblem.key}: ${memberProblem.rule}`, { key: `registry.member.${memberProblem.key}` });
  return deepFreeze(config);
}
