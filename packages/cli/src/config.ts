import { readFileSync } from 'node:fs';
import { ConfigurationError, CORE_OPTIONS, envName, memoryPlugin, type RegistryConfig, resolveConfig } from '@rollcall/core';
import { loadConfiguredPlugin, PLUGIN_PACKAGES } from '@rollcall/core/admin';
import type { OptionSchema, RegistryPlugin } from '@rollcall/core/spi';
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

/** Where a key's value came from; `command`: set by the command itself (a read command opens sqlite read-only). */
export type Source = 'default' | 'file' | 'env' | 'flag' | 'command';

/** A configuration as the CLI resolved it: the flat form core validates, and where each key came from. */
export interface CliConfig {
  /** The flat form, every key `registry.*`; pass it to `createRegistry`. */
  flat: Record<string, unknown>;
  sources: Map<string, Source>;
  plugin: RegistryPlugin;
  /** The validated configuration. */
  resolved: RegistryConfig;
}

type FlatValue = string | number | boolean | readonly string[];

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads `--config`: JSON in the object or the flat form, flattened to `registry.*` keys. */
export function readConfigFile(path: string): Map<string, FlatValue> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigurationError(`--config ${path}: cannot read it: ${(err as Error).message}`, { key: '--config', cause: err });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConfigurationError(`--config ${path}: not valid JSON: ${(err as Error).message}`, { key: '--config', cause: err });
  }
  if (!isPlainObject(value)) throw new ConfigurationError(`--config ${path}: expected a JSON object`, { key: '--config' });
  // `{ "registry": { ... } }` is the object form too.
  if (Object.keys(value).length === 1 && isPlainObject(value.registry)) value = value.registry;
  const out = new Map<string, FlatValue>();
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length > 0 && keys.every((k) => k.startsWith('registry.'))) {
    for (const [k, v] of Object.entries(obj)) out.set(k, v as FlatValue);
    return out;
  }
  const walk = (prefix: string, node: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(node)) {
      if (isPlainObject(v)) walk(`${prefix}${k}.`, v);
      else if (v !== undefined && v !== null) out.set(`${prefix}${k}`, v as FlatValue);
    }
  };
  walk('registry.', obj);
  return out;
}

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

/** The schema of every key for a plugin: core's and its section's, as flat keys. */
export function flatSchema(plugin: RegistryPlugin): Map<string, OptionSchema[string]> {
  const schema = new Map<string, OptionSchema[string]>();
  for (const [k, spec] of Object.entries(CORE_OPTIONS)) schema.set(`registry.${k}`, spec);
  for (const [k, spec] of Object.entries(plugin.options)) schema.set(`registry.${plugin.type}.${k}`, spec);
  return schema;
}

/** `read`: the command only looks (members, leader, locks, watch, doctor, migrate status); `write`: it may change records (release, demo). */
export type Access = 'read' | 'write';

/** Set by read commands: the registry writes nothing (and sqlite is opened read-only). */
export const READ_ONLY_KEY = 'registry.readOnly';

/**
 * Resolves the configuration of a command from its three forms, as the
 * library takes them: `--config` (JSON), `REGISTRY_*` variables, and `-o`
 * flags, later ones overriding earlier ones. `defaults` come first of all (the
 * demo's timings). Validated by core: unknown keys and broken rules are
 * INVALID_CONFIG naming the key. `access: 'read'` sets `registry.readOnly`.
 */
export async function resolveCliConfig(flags: ConfigFlags, env: NodeJS.ProcessEnv = process.env, defaults: Record<string, FlatValue> = {}, access: Access = 'write'): Promise<CliConfig> {
  const file = flags.config ? readConfigFile(flags.config) : new Map<string, FlatValue>();
  const cli = parseOptionFlags(flags.option);
  if (flags.type !== undefined) cli.set('registry.type', flags.type);
  if (flags.cluster !== undefined) cli.set('registry.cluster', flags.cluster);
  const type = cli.get('registry.type') ?? env.REGISTRY_TYPE ?? file.get('registry.type') ?? defaults['registry.type'];
  if (type === undefined || type === '') {
    throw new ConfigurationError('registry.type: is required; give --type <type>, -o registry.type=<type>, REGISTRY_TYPE or a --config file (types: ' + Object.keys(PLUGIN_PACKAGES).join(', ') + ')', { key: 'registry.type' });
  }
  if (typeof type !== 'string') throw new ConfigurationError(`registry.type: expected a string, got ${JSON.stringify(type)}`, { key: 'registry.type' });
  // Loaded the way core loads it (memory built in); a plugin made of others (migrate) reads the types it names from whichever form gives them.
  const given = (key: string) => cli.get(key) ?? env[envName(key)] ?? file.get(key) ?? defaults[key];
  const plugin = await loadConfiguredPlugin(type, given, [memoryPlugin]);
  const byEnvName = new Map<string, string>();
  for (const key of flatSchema(plugin).keys()) byEnvName.set(envName(key), key);
  const fromEnv = new Map<string, string>();
  for (const [name, value] of Object.entries(env)) {
    if (!name.startsWith('REGISTRY_') || value === undefined) continue;
    const key = byEnvName.get(name);
    if (!key) throw new ConfigurationError(`${name}: unknown environment variable for registry.type=${type}; known ones are ${[...byEnvName.keys()].join(', ')}`, { key: name });
    fromEnv.set(key, value);
  }
  const flat: Record<string, unknown> = {};
  const sources = new Map<string, Source>();
  const layer = (entries: Iterable<[string, unknown]>, source: Source) => {
    for (const [k, v] of entries) {
      flat[k] = v;
      sources.set(k, source);
    }
  };
  layer(Object.entries(defaults), 'default');
  layer(file, 'file');
  layer(fromEnv, 'env');
  layer(cli, 'flag');
  flat['registry.type'] = type;
  // A command that only reads writes nothing: no expiry delete, no reaper campaign, no schema; sqlite opens read-only, so a wrong path is NOT_FOUND rather than a new, empty registry.
  if (access === 'read' && !sources.has(READ_ONLY_KEY)) layer([[READ_ONLY_KEY, true]], 'command');
  const resolved = resolveConfig(flat as never, plugin, Object.keys(PLUGIN_PACKAGES));
  return { flat, sources, plugin, resolved };
}

/** The keys that were set, with secret values masked: for `doctor` and the demo's header. */
export function describeKeys(config: CliConfig): { key: string; value: string; source: Source }[] {
  const schema = flatSchema(config.plugin);
  return [...config.sources.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([key, source]) => {
      const spec = schema.get(key);
      const raw = config.flat[key];
      const value = spec && spec.type === 'string' && spec.secret ? '<secret>' : Array.isArray(raw) ? raw.join(',') : String(raw);
      return { key, value, source };
    });
}
