import { ConfigurationError, configLayers, describeSource, envLayer, fileLayer, loadRegistryConfig, memoryPlugin, readLayers, type ConfigLayer, type ConfigLayerKind, type LayeredConfig, type RegistryConfig, type ResolvedOption } from '@rollcall/core';
import { PLUGIN_PACKAGES } from '@rollcall/core/admin';
import type { RegistryPlugin } from '@rollcall/core/spi';
import { usageError } from './errors.js';

/** The configuration flags every command takes. */
export interface ConfigFlags {
  /** `--config <file>`: JSON, object form (`{ "type": ... }`) or flat form (`{ "registry.type": ... }`). */
  config?: string;
  /** `-o key=value`, repeatable; `registry.` may be left out. */
  option?: string[];
  /** `--type`: shorthand for `-o registry.type=...`. */
  type?: string;
  /** `--cluster`: shorthand for `-o registry.cluster=...`. */
  cluster?: string;
}

/** A configuration as the CLI resolved it through core's resolver. */
export interface CliConfig {
  /** The layers, for `createRegistry`. */
  source: LayeredConfig;
  /** The values a layer set (the schema's defaults left out), flat form: for a child process's configuration file. */
  flat: Record<string, unknown>;
  /** Every key with a value, and the layer that set it. */
  sources: ReadonlyMap<string, ResolvedOption>;
  plugin: RegistryPlugin;
  /** The validated configuration. */
  resolved: RegistryConfig;
}

type FlatValue = string | number | boolean | readonly string[];

/** Parses `-o key=value` flags; `registry.` may be left out of the key. */
export function parseOptionFlags(flags: readonly string[] = []): Map<string, string> {
  const out = new Map<string, string>();
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    if (eq <= 0) throw usageError(`-o ${JSON.stringify(flag)}: expected key=value, e.g. -o registry.type=sqlite`, flag === "json" ? "-o sets configuration keys; for JSON output use --output json (or --json)" : undefined);
    const key = flag.slice(0, eq).trim();
    out.set(key.startsWith('registry.') ? key : `registry.${key}`, flag.slice(eq + 1));
  }
  return out;
}

/** `read`: the command only looks (members, leader, locks, watch, doctor, migrate status); `write`: it may change records (release, demo). */
export type Access = 'read' | 'write';

/** Set by read commands: the registry writes nothing (and sqlite is opened read-only). */
export const READ_ONLY_KEY = 'registry.readOnly';

/** Whether a layer set the key (the command's own defaults count), rather than the schema's default. */
export function isGiven(source: ResolvedOption['source'] | undefined): boolean {
  return source !== undefined && (source.layer !== 'default' || source.name !== undefined);
}

/**
 * Resolves the configuration of a command with core's resolver, in layers:
 * the command's own defaults (`defaults`, the demo's timings; and
 * `registry.readOnly` for `access: 'read'`), `--config` (JSON), `REGISTRY_*`
 * variables, and `-o`/`--type`/`--cluster` flags, each overriding the one
 * before. Unknown keys and broken rules are INVALID_CONFIG naming the key and
 * the layer that set it.
 */
export async function resolveCliConfig(flags: ConfigFlags, env: NodeJS.ProcessEnv = process.env, defaults: Record<string, FlatValue> = {}, access: Access = 'write'): Promise<CliConfig> {
  const flagged: Record<string, string> = Object.fromEntries(parseOptionFlags(flags.option));
  if (flags.type !== undefined) flagged['registry.type'] = flags.type;
  if (flags.cluster !== undefined) flagged['registry.cluster'] = flags.cluster;
  // A command that only reads writes nothing: no expiry delete, no reaper campaign, no schema; sqlite opens read-only, so a wrong path is NOT_FOUND rather than a new, empty registry.
  const own = { ...defaults, ...(access === 'read' ? { [READ_ONLY_KEY]: true } : {}) };
  const layers: ConfigLayer[] = [{ layer: 'default', name: 'command', values: own }, ...(flags.config ? [fileLayer(flags.config)] : []), envLayer(env), { layer: 'flag', values: flagged }];
  const source = configLayers(...layers);
  const type = readLayers(layers, 'registry.', 'registry.type');
  if (type === undefined || type === '') {
    throw new ConfigurationError('registry.type: is required; give --type <type>, -o registry.type=<type>, REGISTRY_TYPE or a --config file (types: ' + Object.keys(PLUGIN_PACKAGES).join(', ') + ')', { key: 'registry.type' });
  }
  const { plugin, config, sources } = await loadRegistryConfig(source, [memoryPlugin]);
  const flat = Object.fromEntries([...sources].filter(([, v]) => isGiven(v.source)).map(([key, v]) => [key, v.value]));
  return { source, flat, sources, plugin, resolved: config };
}

/** The keys a layer set, with secret values masked and where each came from: for `doctor` and the demo's header. */
export function describeKeys(config: CliConfig): { key: string; value: string; source: string; layer: ConfigLayerKind }[] {
  return [...config.sources.entries()]
    .filter(([, v]) => isGiven(v.source))
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([key, { value, source, secret }]) => ({ key, value: secret ? '<secret>' : Array.isArray(value) ? value.join(',') : String(value), source: describeSource(source), layer: source.layer }));
}
