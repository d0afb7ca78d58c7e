import { ConfigurationError } from '../errors.js';
import { describeSource, type ConfigLayer, type ValueSource } from './config-layers.js';
import { nearMiss } from './near-miss.js';
import { coerceOption, envName, flattenObject, isSecret, OptionProblem, type OptionSchema, type OptionSpec } from './option-schema.js';

/** A resolved value and the layer that set it. */
export interface ResolvedOption {
  readonly value: unknown;
  readonly source: ValueSource;
  /** The value must never be shown (a password, a token). */
  readonly secret?: boolean;
}

/** What {@link resolveOptions} returns. */
export interface ResolvedOptions<T = Readonly<Record<string, unknown>>> {
  /** The values, nested (`tls.caFile` → `{ tls: { caFile } }`), defaults applied, frozen (values only code gives are not). */
  readonly values: T;
  /** Every key that has a value, by its flat key (`registry.cluster`), with the layer that set it: `default` for the schema's default. */
  readonly sources: ReadonlyMap<string, ResolvedOption>;
}

/** What is resolved, and how its keys are named. */
export interface ResolveSpec {
  /** Prefix of every flat key, `registry.`; `''` for a configuration given in code only. Environment variables are read under `envName(prefix)`. */
  readonly prefix: string;
  /** The keys, relative to the prefix. */
  readonly schema: OptionSchema;
  /** For a key outside the schema: a better rule than "unknown key" (another backend's section), or undefined. */
  readonly foreign?: (key: string) => string | undefined;
  /** Named in errors (`[pod-runner]`). Default core's. */
  readonly backend?: string;
}

const SCHEMA_DEFAULT: ValueSource = Object.freeze({ layer: 'default' });

/** The source a message names: ` (from env REGISTRY_CLUSTER)`. @internal */
export function fromSource(source: ValueSource | undefined): string {
  return source ? ` (from ${describeSource(source)})` : '';
}

/** INVALID_CONFIG naming the key, the rule and, when known, the layer that set it. @internal */
export function configError(key: string, rule: string, source: ValueSource | undefined, backend?: string): ConfigurationError {
  return new ConfigurationError(`${key}: ${rule}${fromSource(source)}`, { key, backend });
}

function sourceOfLayer(layer: ConfigLayer): ValueSource {
  return layer.layer === 'file' || layer.layer === 'default' ? (layer.name === undefined ? { layer: layer.layer } : { layer: layer.layer, name: layer.name }) : { layer: layer.layer };
}

/** Every value a layer sets, by flat key; unknown keys and variables throw, naming the key, the layer and the near miss. */
function layerEntries(spec: ResolveSpec, layer: ConfigLayer): Map<string, { raw: unknown; source: ValueSource }> {
  const { prefix, schema } = spec;
  const out = new Map<string, { raw: unknown; source: ValueSource }>();
  const fullKeys = Object.keys(schema).map((k) => prefix + k);
  if (layer.layer === 'env') {
    const envPrefix = envName(prefix);
    if (envPrefix === '') throw configError('env', 'this configuration is given in code only, not by environment variables', sourceOfLayer(layer), spec.backend);
    const byName = new Map(fullKeys.map((k) => [envName(k), k]));
    for (const [name, raw] of Object.entries(layer.values)) {
      if (!name.startsWith(envPrefix)) continue;
      const key = byName.get(name);
      if (!key) {
        const guess = nearMiss(name, byName.keys(), '_');
        throw new ConfigurationError(`${name}: unknown environment variable; ${guess ? `did you mean ${guess}?` : `known ones are ${[...byName.keys()].join(', ')}`}`, { key: name, backend: spec.backend });
      }
      if (spec.schema[key.slice(prefix.length)]!.type === 'code') throw configError(key, 'can only be given in code', { layer: 'env', name }, spec.backend);
      out.set(key, { raw, source: { layer: 'env', name } });
    }
    return out;
  }
  const source = sourceOfLayer(layer);
  const flat = new Map<string, unknown>();
  const keys = Object.keys(layer.values);
  if (prefix !== '' && keys.length > 0 && keys.every((k) => k.startsWith(prefix))) for (const [k, v] of Object.entries(layer.values)) flat.set(k, v);
  else {
    const whole = (key: string) => {
      const s = schema[key.slice(prefix.length)];
      return s?.type === 'map' || s?.type === 'code';
    };
    try {
      flattenObject(prefix, layer.values as Record<string, unknown>, flat, whole);
    } catch (err) {
      if (err instanceof OptionProblem) throw configError(err.key, err.rule, source, spec.backend);
      throw err;
    }
  }
  for (const [key, raw] of flat) {
    if (raw === undefined) continue;
    const relative = key.startsWith(prefix) ? key.slice(prefix.length) : undefined;
    if (relative === undefined || !(relative in schema)) {
      if (relative === undefined) throw configError(key, `unknown key; every key starts with ${prefix}`, source, spec.backend);
      const foreign = spec.foreign?.(key);
      if (foreign) throw configError(key, foreign, source, spec.backend);
      const guess = nearMiss(key, fullKeys);
      throw configError(key, `unknown key; ${guess ? `did you mean ${guess}?` : `known keys are ${fullKeys.join(', ')}`}`, source, spec.backend);
    }
    const kind = schema[relative]!.type;
    if (kind === 'code' && (layer.layer === 'flag' || layer.layer === 'file')) throw configError(key, 'can only be given in code', source, spec.backend);
    out.set(key, { raw, source });
  }
  return out;
}

/** Puts a value at its nested place; `made` collects the objects made on the way, which are frozen once filled. */
function place(out: Record<string, unknown>, relative: string, value: unknown, made: Record<string, unknown>[]): void {
  const path = relative.split('.');
  let node = out;
  for (const part of path.slice(0, -1)) {
    if (!(part in node)) made.push((node[part] = {}) as Record<string, unknown>);
    node = node[part] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

/**
 * The one configuration resolver: stacks `layers` (lowest precedence first:
 * defaults, file, environment, flags, or code) over the schema's defaults, and
 * checks every value by its key's spec. Unknown keys and variables, wrong types
 * and missing required keys throw INVALID_CONFIG naming the key, the layer that
 * set it and the rule (with a near miss for a mistyped key); a secret value is
 * never shown. Each value comes back with its source.
 */
export function resolveOptions<T = Readonly<Record<string, unknown>>>(spec: ResolveSpec, layers: readonly ConfigLayer[]): ResolvedOptions<T> {
  const winning = new Map<string, { raw: unknown; source: ValueSource }>();
  for (const layer of layers) for (const [key, given] of layerEntries(spec, layer)) winning.set(key, given);
  const values: Record<string, unknown> = {};
  const made = [values];
  const sources = new Map<string, ResolvedOption>();
  for (const [relative, option] of Object.entries(spec.schema) as [string, OptionSpec][]) {
    const key = spec.prefix + relative;
    const given = winning.get(key);
    let value: unknown;
    if (given) {
      try {
        value = coerceOption(key, option, given.raw);
      } catch (err) {
        if (err instanceof OptionProblem) throw configError(err.key, err.rule, given.source, spec.backend);
        throw err;
      }
    } else value = 'default' in option ? option.default : undefined;
    if (value === undefined) {
      if (option.required) throw configError(key, 'is required', undefined, spec.backend);
      continue;
    }
    place(values, relative, value, made);
    sources.set(key, { value, source: given?.source ?? SCHEMA_DEFAULT, ...(isSecret(key, option) ? { secret: true } : {}) });
  }
  // the data is frozen, not a value only code gives (a registry, a clock)
  for (const node of made) Object.freeze(node);
  return { values: values as T, sources };
}
