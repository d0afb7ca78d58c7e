import { systemClock, type Clock } from '../clock.js';
import { ConfigurationError } from '../errors.js';
import { silentLogger, type Logger } from '../logger.js';
import { CLUSTER_RULE, isValidCluster } from '../names.js';
import type { PluginContext, RegistryPlugin } from '../plugin.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../timing.js';
import type { OptionSchema } from './option-schema.js';
import { configError, resolveOptions, type ResolvedOption } from './option-resolver.js';

/**
 * A plugin's section as code passes it: every key optional (the schema holds
 * the defaults), and each nested group (`tls`, `auth`) partial too.
 */
export type PluginOptionsInput<Options> = {
  [K in keyof Options]?: Options[K] extends readonly unknown[] ? Options[K] : Options[K] extends object ? Partial<Options[K]> : Options[K];
};

/**
 * What a backend's `create<Type>Store` factory takes: the keys of its
 * `registry.<type>.*` section, plus what core otherwise gives `connect`.
 */
export type StoreFactoryOptions<Options> = PluginOptionsInput<Options> & {
  /** The cluster whose records the store keeps, a DNS-1123 label. Default `default`. */
  cluster?: string;
  /** Bound on each backend call, milliseconds. Default 5000 ({@link DEFAULT_REQUEST_TIMEOUT_MS}). */
  requestTimeoutMs?: number;
  /** Default: nothing is logged. */
  logger?: Logger;
  /** Default: the system clock. */
  clock?: Clock;
};

/** The keys `registry.cluster` and `registry.requestTimeoutMs`: every store is given them. */
export const STORE_RUNTIME_OPTIONS = Object.freeze({
  cluster: { type: 'string', default: 'default', doc: 'The cluster name.', check: (v: string) => (isValidCluster(v) ? undefined : CLUSTER_RULE) },
  requestTimeoutMs: { type: 'integer', default: DEFAULT_REQUEST_TIMEOUT_MS, min: 1, doc: 'Bound on each backend call, ms.' },
} satisfies OptionSchema);

type PluginSchema<Options> = Pick<RegistryPlugin<Options>, 'type' | 'options' | 'validate'>;

/** A plugin's cross-key rules over its resolved section: INVALID_CONFIG naming the key and the layer that set it. @internal */
export function assertPluginRules<Options>(plugin: PluginSchema<Options>, options: Options, sources: ReadonlyMap<string, ResolvedOption>, prefix = `registry.${plugin.type}.`): void {
  const problem = plugin.validate?.(options);
  if (problem) throw configError(`${prefix}${problem.key}`, problem.rule, sources.get(`${prefix}${problem.key}`)?.source);
}

/**
 * Validates a plugin's section given in code (the object form of
 * `registry.<type>.*`, e.g. `{ endpoints, tls: { caFile } }`) exactly as
 * `createRegistry` does: defaults applied; unknown keys, wrong types and broken
 * rules throw INVALID_CONFIG naming the flat key. The result is frozen.
 */
export function resolvePluginOptions<Options>(plugin: PluginSchema<Options>, input: PluginOptionsInput<Options> = {}): Options {
  const prefix = `registry.${plugin.type}.`;
  if (typeof input !== 'object' || input === null) throw new ConfigurationError(`registry.${plugin.type}: the options must be an object`, { key: `registry.${plugin.type}` });
  const { values, sources } = resolveOptions<Options>({ prefix, schema: plugin.options }, [{ layer: 'code', values: input as Record<string, unknown> }]);
  assertPluginRules(plugin, values, sources, prefix);
  return values;
}

/**
 * The context a plugin's `connect` gets, from a factory's options: the section
 * validated by {@link resolvePluginOptions}, the cluster and request timeout by
 * the core keys' rules, and a silent logger and the system clock by default.
 */
export function pluginContext<Options>(plugin: PluginSchema<Options>, input: StoreFactoryOptions<Options> = {}): PluginContext<Options> {
  const { cluster, requestTimeoutMs, logger = silentLogger, clock = systemClock, ...section } = input;
  const core = resolveOptions<{ cluster: string; requestTimeoutMs: number }>({ prefix: 'registry.', schema: STORE_RUNTIME_OPTIONS }, [{ layer: 'code', values: { cluster, requestTimeoutMs } }]).values;
  const options = resolvePluginOptions(plugin, section as PluginOptionsInput<Options>);
  return { cluster: core.cluster, requestTimeoutMs: core.requestTimeoutMs, options, logger, clock };
}
