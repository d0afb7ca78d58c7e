import { readFileSync } from 'node:fs';
import { ConfigurationError } from '../errors.js';
import { envName, isPlainObject } from './option-schema.js';
import { jsonSyntaxProblem } from './json-syntax.js';

/** The layers a configuration is read from, lowest precedence first as a CLI stacks them: defaults, a file, the environment, flags; `code` is what a program passes. */
export type ConfigLayerKind = 'default' | 'file' | 'env' | 'flag' | 'code';

/** Where a resolved value came from. */
export interface ValueSource {
  readonly layer: ConfigLayerKind;
  /** `file`: its path; `env`: the variable; `default`: the name of a default layer a caller gave (the CLI's `command`), absent for the schema's own default. */
  readonly name?: string;
}

/** One layer of a configuration. */
export interface ConfigLayer {
  readonly layer: ConfigLayerKind;
  /** `file`: its path; `default`: what set these defaults (shown instead of `default`). */
  readonly name?: string;
  /** `env`: variables by name (those under the configuration's prefix are read, e.g. `REGISTRY_*`). Any other layer: the object form, or the flat form (every key starting `registry.`). */
  readonly values: Readonly<Record<string, unknown>>;
}

/** A source as messages and `rollcall doctor` show it: `default`, `file rollcall.json`, `env REGISTRY_CLUSTER`, `flag`, `code`. */
export function describeSource(source: ValueSource): string {
  if (source.layer === 'default') return source.name ?? 'default';
  return source.name === undefined ? source.layer : `${source.layer} ${source.name}`;
}

const LAYERS = Symbol('rollcall.configLayers');

/** Layers stacked for one resolution, made by {@link configLayers} or {@link configFromEnv}; keys spread beside it join as code. */
export interface LayeredConfig {
  readonly [LAYERS]: readonly ConfigLayer[];
}

/** Stacks layers, lowest precedence first: a later layer's value wins. */
export function configLayers(...layers: ConfigLayer[]): LayeredConfig {
  return { [LAYERS]: Object.freeze(layers.map((l) => Object.freeze({ ...l, values: Object.freeze({ ...l.values }) }))) };
}

/** The environment as a layer: every variable defined (only those under the prefix are read). */
export function envLayer(env: Readonly<Record<string, string | undefined>> = process.env): ConfigLayer {
  const picked: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) picked[name] = value;
  return { layer: 'env', values: picked };
}

/**
 * A JSON file as a layer: the object form (`{ "type": "etcd", "etcd": { ... } }`,
 * or the same under `"registry"`) or the flat form (`{ "registry.type": "etcd" }`).
 * A null value is left out, as an absent key. INVALID_CONFIG naming the path
 * when it cannot be read or is not a JSON object.
 */
export function fileLayer(path: string): ConfigLayer {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigurationError(`${path}: cannot read the configuration file: ${(err as Error).message}`, { key: path, cause: err });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The runtime's message quotes the text around the fault, where a password may be: position and reason only, and no cause.
    const problem = jsonSyntaxProblem(text);
    const where = problem ? `${problem.reason} at line ${problem.line}, column ${problem.column}` : 'it does not parse';
    throw new ConfigurationError(`${path}: the configuration file is not valid JSON: ${where} (its text is not shown: it may hold secrets)`, { key: path });
  }
  if (!isPlainObject(value)) throw new ConfigurationError(`${path}: the configuration file must hold a JSON object`, { key: path });
  if (Object.keys(value).length === 1 && isPlainObject(value.registry)) value = value.registry;
  return { layer: 'file', name: path, values: withoutNulls(value as Record<string, unknown>) };
}

function withoutNulls(node: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) if (v !== null) out[k] = isPlainObject(v) ? withoutNulls(v) : v;
  return out;
}

/**
 * Reads the environment form: the `REGISTRY_*` variables, e.g.
 * `REGISTRY_TYPE=kubernetes`. Unknown ones are errors at construction. Keys
 * may be spread beside it, `{ ...configFromEnv(), cluster: 'orders' }`: they
 * join the variables, and a key set both ways to two values is INVALID_CONFIG
 * naming it (never one dropped in silence).
 */
export function configFromEnv(env: Readonly<Record<string, string | undefined>> = process.env): LayeredConfig {
  const picked: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (name.startsWith('REGISTRY_') && value !== undefined) picked[name] = value;
  return configLayers({ layer: 'env', values: picked });
}

function isLayered(source: object): source is LayeredConfig {
  return LAYERS in source;
}

/** Whether a layer holds the flat form under `prefix`: every key starts with it. @internal */
export function isFlat(values: Readonly<Record<string, unknown>>, prefix: string): boolean {
  const keys = Object.keys(values);
  return prefix !== '' && keys.length > 0 && keys.every((k) => k.startsWith(prefix));
}

/** A key as a layer gives it, before any schema: for the type, a plugin's `compose`, and conflicts. Undefined when the layer does not give it. */
export function readLayer(layer: ConfigLayer, prefix: string, key: string): unknown {
  if (layer.layer === 'env') return layer.values[envName(key)];
  if (isFlat(layer.values, prefix)) return layer.values[key];
  let node: unknown = layer.values;
  for (const part of key.slice(prefix.length).split('.')) {
    if (!isPlainObject(node)) return undefined;
    node = node[part];
  }
  return node;
}

/** The value of `key` the stacked layers give, the last layer that gives it winning. */
export function readLayers(layers: readonly ConfigLayer[], prefix: string, key: string): unknown {
  for (let i = layers.length - 1; i >= 0; i--) {
    const value = readLayer(layers[i]!, prefix, key);
    if (value !== undefined) return value;
  }
  return undefined;
}

/** The flat keys a layer sets (environment variables aside), before any schema. */
function layerKeys(layer: ConfigLayer, prefix: string): string[] {
  if (isFlat(layer.values, prefix)) return Object.keys(layer.values);
  const keys: string[] = [];
  const walk = (at: string, node: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(node)) if (isPlainObject(v)) walk(`${at}${k}.`, v);
    else if (v !== undefined) keys.push(`${at}${k}`);
  };
  walk(prefix, layer.values);
  return keys;
}

const same = (a: unknown, b: unknown) => String(Array.isArray(a) ? a.join(',') : a) === String(Array.isArray(b) ? b.join(',') : b);

/**
 * The layers of a source: a {@link LayeredConfig}, with any keys spread beside
 * it as a code layer on top; anything else is one code layer. A key spread
 * beside layers must have their value: which should win cannot be read from a
 * spread (symbol keys come after string keys whatever the order written), and
 * dropping either in silence could put a process in another cluster.
 * `shown(key, value)`: the value as a message may show it; `checked(key)`:
 * whether to check the key now (before a schema is known, only the keys that
 * choose it).
 */
export function layersOf(source: object, prefix: string, shown: (key: string, value: unknown) => string, checked: (key: string) => boolean = () => true): readonly ConfigLayer[] {
  if (!isLayered(source)) return [{ layer: 'code', values: source as Record<string, unknown> }];
  const beside = Object.fromEntries(Object.entries(source));
  const layers = source[LAYERS];
  if (Object.keys(beside).length === 0) return layers;
  const code: ConfigLayer = { layer: 'code', values: beside };
  for (const key of layerKeys(code, prefix).filter(checked)) {
    const given = readLayer(code, prefix, key);
    for (const layer of layers) {
      const other = readLayer(layer, prefix, key);
      if (other === undefined || same(given, other)) continue;
      const where = layer.layer === 'env' ? `by ${envName(key)} in the environment` : `in the ${layer.layer} layer${layer.name ? ` ${layer.name}` : ''}`;
      throw new ConfigurationError(`${key}: set twice, to ${shown(key, given)} in code and to ${shown(key, other)} ${where}; give it in one place (remove the key, or unset the variable)`, { key });
    }
  }
  return [...layers, code];
}
