import { hostname } from 'node:os';
import { ConfigurationError } from '../errors.js';
import { MEMBER_AFTER_LOST, MEMBER_LIVENESS_MODES, type MemberConfig } from '../member-liveness.js';
import { IDENTITY_RULE, isValidIdentity } from '../names.js';
import { loadConfiguredPlugin, PLUGIN_PACKAGES, type RegistryPlugin } from '../plugin.js';
import { DEFAULT_LEASE_TIMING, DEFAULT_MEMBER_TIMING, defaultMemberRenewDeadline, leaseTimingProblem, memberTimingProblem, podDeadlineProblem, type LeaseTiming } from '../timing.js';
import { MAX_LEASE_DURATION_SECONDS } from '../lease-record.js';
import type { BackendSection, RegistryType } from './backend-sections.js';
import { layersOf, readLayers, type ConfigLayer, type LayeredConfig } from './config-layers.js';
import { configError, resolveOptions, specOf, type ResolvedOption } from './option-resolver.js';
import { shownValue, type OptionSchema, type OptionSpec } from './option-schema.js';
import { assertPluginRules, STORE_RUNTIME_OPTIONS } from './plugin-options.js';

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
  /** Member heartbeat timings (defaults 5000 / 20000 ms, renew deadline ¾ of the lease), liveness mode (default `heartbeat`) and what a lost member does (default `reannounce`). */
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

/** The environment form, made by {@link configFromEnv}: a {@link LayeredConfig} of one layer. */
export type EnvRegistryConfig = LayeredConfig;

/** Any form of the configuration: the object form, the flat form, or layers ({@link configFromEnv}, {@link configLayers}), with keys spread beside them. */
export type ConfigSource = RegistryConfigInput | FlatRegistryConfig | LayeredConfig;

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

/** The longest duration a timing key takes, ms (one hour): records declare leases up to MAX_LEASE_DURATION_SECONDS. */
const MAX_DURATION_MS = MAX_LEASE_DURATION_SECONDS * 1000;

/** The core keys, relative to `registry.`. */
export const CORE_OPTIONS: OptionSchema = Object.freeze({
  type: { type: 'string', required: true, doc: 'The backend plugin.' },
  cluster: STORE_RUNTIME_OPTIONS.cluster,
  identity: { type: 'string', doc: 'Holder identity of this process. Default <hostname>-<pid>.', check: (v) => (isValidIdentity(v) ? undefined : IDENTITY_RULE) },
  'election.leaseDurationMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.leaseDurationMs, min: 1000, max: MAX_DURATION_MS, doc: 'Election lease, ms.' },
  'election.renewDeadlineMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.renewDeadlineMs, min: 1, max: MAX_DURATION_MS, doc: 'Election renew deadline, ms.' },
  'election.retryPeriodMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.retryPeriodMs, min: 1, max: MAX_DURATION_MS, doc: 'Election retry period, ms.' },
  'lock.leaseDurationMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.leaseDurationMs, min: 1000, max: MAX_DURATION_MS, doc: 'Lock lease, ms.' },
  'lock.renewDeadlineMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.renewDeadlineMs, min: 1, max: MAX_DURATION_MS, doc: 'Lock renew deadline, ms.' },
  'lock.retryPeriodMs': { type: 'integer', default: DEFAULT_LEASE_TIMING.retryPeriodMs, min: 1, max: MAX_DURATION_MS, doc: 'Lock retry period, ms.' },
  'member.heartbeatIntervalMs': { type: 'integer', default: DEFAULT_MEMBER_TIMING.heartbeatIntervalMs, min: 1, max: MAX_DURATION_MS, doc: 'Heartbeat interval, ms.' },
  'member.leaseDurationMs': { type: 'integer', default: DEFAULT_MEMBER_TIMING.leaseDurationMs, min: 1000, max: MAX_DURATION_MS, doc: 'Member lease, ms.' },
  'member.renewDeadlineMs': { type: 'integer', min: 1, max: MAX_DURATION_MS, doc: 'How long after the send of its last successful heartbeat a member counts itself alive; past it, it is lost. Below the member lease. ms. Default 3/4 of member.leaseDurationMs.' },
  'member.podRenewDeadlineMs': {
    type: 'integer',
    default: 0,
    min: 0,
    doc: 'A member in a pod reads its own record every heartbeatIntervalMs and is lost this long after the last read that found it; below 40000 (node-monitor-grace-period 50 s less the node lease renew 10 s). ms; 0 (default): off.',
  },
  'member.afterLost': {
    type: 'enum',
    values: MEMBER_AFTER_LOST,
    default: 'reannounce',
    doc: 'What a member does once lost (its renew deadline passed, or its record was deleted or taken): reannounce (a new incarnation: a new record, peers see removed then added) or exit (the process exits with code 75).',
  },
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

const PREFIX = 'registry.';

/**
 * The layers of any form of the configuration. A key spread beside layers and
 * set in them to another value is INVALID_CONFIG; with no schema yet, only
 * `registry.type` is checked (a value is shown only once its spec says it is
 * no secret).
 */
function registryLayers(source: ConfigSource, schema?: OptionSchema): readonly ConfigLayer[] {
  if (typeof source !== 'object' || source === null) throw new ConfigurationError('the configuration must be an object', { key: 'registry' });
  if (!schema) return layersOf(source, PREFIX, (key, value) => shownValue(key, undefined, value), (key) => key === 'registry.type');
  return layersOf(source, PREFIX, (key, value) => shownValue(key, specOf(schema, key.slice(PREFIX.length)), value));
}

/** Every key of the core's and the plugin's section, relative to `registry.`. */
function registrySchema(plugin: RegistryPlugin): OptionSchema {
  const schema: Record<string, OptionSpec> = { ...CORE_OPTIONS };
  for (const [key, spec] of Object.entries(plugin.options)) schema[`${plugin.type}.${key}`] = spec;
  return schema;
}

/** A configuration validated, with the layer that set each value. */
export interface ResolvedRegistryConfig {
  readonly config: RegistryConfig;
  /** Every key with a value (`registry.cluster`), its value and the layer that set it; `default` for a default. */
  readonly sources: ReadonlyMap<string, ResolvedOption>;
}

/** A configuration validated against the plugin its `registry.type` loaded. */
export interface LoadedRegistryConfig extends ResolvedRegistryConfig {
  readonly plugin: RegistryPlugin;
}

function resolveLayered(source: ConfigSource, plugin: RegistryPlugin, otherTypes: readonly string[]): ResolvedRegistryConfig {
  const schema = registrySchema(plugin);
  const layers = registryLayers(source, schema);
  const foreign = (key: string) => {
    const other = otherTypes.find((t) => t !== plugin.type && key.startsWith(`${PREFIX}${t}.`));
    return other ? `belongs to registry.type=${other}, but registry.type is ${plugin.type}` : undefined;
  };
  const { values, sources } = resolveOptions<Omit<RegistryConfig, 'identity' | 'options'> & { identity?: string } & Record<string, unknown>>({ prefix: PREFIX, schema, foreign }, layers);
  if (values.type !== plugin.type) throw configError('registry.type', `${JSON.stringify(values.type)} is not the plugin's type ${JSON.stringify(plugin.type)}`, sources.get('registry.type')?.source);
  const options = (values[plugin.type] ?? Object.freeze({})) as Readonly<Record<string, unknown>>;
  const sourceOf = (key: string) => sources.get(key)?.source;
  assertPluginRules(plugin, options, sources);
  const all = new Map(sources);
  const identity = values.identity ?? defaultIdentity();
  if (values.identity === undefined) all.set('registry.identity', { value: identity, source: { layer: 'default' } });
  if (values.member.renewDeadlineMs === undefined) all.set('registry.member.renewDeadlineMs', { value: defaultMemberRenewDeadline(values.member.leaseDurationMs), source: { layer: 'default' } });
  const config: RegistryConfig = {
    type: values.type,
    cluster: values.cluster,
    identity,
    election: values.election,
    lock: values.lock,
    member: Object.freeze({ ...values.member, renewDeadlineMs: values.member.renewDeadlineMs ?? defaultMemberRenewDeadline(values.member.leaseDurationMs) }),
    requestTimeoutMs: values.requestTimeoutMs,
    maxPayloadBytes: values.maxPayloadBytes,
    readOnly: values.readOnly,
    options,
  };
  for (const kind of ['election', 'lock'] as const) {
    const problem = leaseTimingProblem(config[kind]);
    if (problem) throw configError(`registry.${kind}.${problem.key}`, problem.rule, sourceOf(`registry.${kind}.${problem.key}`));
  }
  const memberProblem = memberTimingProblem(config.member);
  if (memberProblem) throw configError(`registry.member.${memberProblem.key}`, memberProblem.rule, sourceOf(`registry.member.${memberProblem.key}`));
  const podProblem = podDeadlineProblem(config.member);
  if (podProblem) throw configError('registry.member.podRenewDeadlineMs', podProblem, sourceOf('registry.member.podRenewDeadlineMs'));
  return { config: Object.freeze(config), sources: all };
}

/**
 * Validates a configuration in any of its forms against the core keys and the
 * plugin's section, and tells where each value came from. Unknown keys, wrong
 * types and impossible timings throw INVALID_CONFIG naming the key, the layer
 * that set it and the rule; so does a `registry.type` other than the plugin's.
 */
export function resolveRegistryConfig(source: ConfigSource, plugin: RegistryPlugin, otherTypes: readonly string[] = []): ResolvedRegistryConfig {
  return resolveLayered(source, plugin, otherTypes);
}

/**
 * Validates a configuration in any of its three forms against the core keys and
 * the plugin's section. Unknown keys, wrong types and impossible timings throw
 * INVALID_CONFIG naming the key and the rule; so does a `registry.type` other
 * than the plugin's. The result is frozen.
 */
export function resolveConfig(source: ConfigSource, plugin: RegistryPlugin, otherTypes: readonly string[] = []): RegistryConfig {
  return resolveRegistryConfig(source, plugin, otherTypes).config;
}

/** `registry.type` as the layers give it. @internal */
export function configType(source: ConfigSource): string {
  const type = readLayers(registryLayers(source), PREFIX, 'registry.type');
  if (type === undefined) throw new ConfigurationError('registry.type: is required (REGISTRY_TYPE in the environment form)', { key: 'registry.type' });
  if (typeof type !== 'string' || type === '') throw new ConfigurationError(`registry.type: expected a non-empty string, got ${JSON.stringify(type)}`, { key: 'registry.type' });
  return type;
}

/**
 * Loads the plugin `registry.type` names (lazily; `builtins` first, e.g. the
 * memory plugin and a program's own) and validates the configuration against
 * it: what `createRegistry` does before it connects, for a tool that shows the
 * configuration (`rollcall doctor`) too.
 */
export async function loadRegistryConfig(source: ConfigSource, builtins: readonly RegistryPlugin<never>[] = []): Promise<LoadedRegistryConfig> {
  const layers = registryLayers(source);
  const plugin = await loadConfiguredPlugin(configType(source), (key) => readLayers(layers, PREFIX, key), builtins);
  return { plugin, ...resolveLayered(source, plugin, Object.keys(PLUGIN_PACKAGES)) };
}
