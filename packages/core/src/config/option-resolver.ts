import { ConfigurationError } from '../errors.js';
import { describeSource, isFlat, type ConfigLayer, type ValueSource } from './config-layers.js';
import { unknownNameAdvice } from './near-miss.js';
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
  return layer.name === undefined ? { layer: layer.layer } : { layer: layer.layer, name: layer.name };
}

/** A key's spec; not a property every object has (`constructor`). @internal */
export function specOf(schema: OptionSchema, relative: string): OptionSpec | undefined {
  return Object.hasOwn(schema, relative) ? schema[relative] : undefined;
}

type Given = Map<string, { raw: unknown; source: ValueSource }>;

/** The variables under the prefix (`REGISTRY_*`), by the key each names; an unknown one throws, with the variable meant. */
function envEntries(spec: ResolveSpec, layer: ConfigLayer): Given {
  const envPrefix = envName(spec.prefix);
  if (envPrefix === '') throw configError('env', 'this configuration is given in code only, not by environment variables', undefined, spec.backend);
  const byName = new Map(Object.keys(spec.schema).map((k) => [envName(spec.prefix + k), k]));
  const out: Given = new Map();
  for (const [name, raw] of Object.entries(layer.values)) {
    if (!name.startsWith(envPrefix)) continue;
    const relative = byName.get(name);
    const source: ValueSource = { layer: 'env', name };
    if (relative === undefined) {
      throw new ConfigurationError(`${name}: unknown environment variable; ${unknownNameAdvice(name, byName.keys(), 'variables', '_')}`, { key: name, backend: spec.backend });
    }
    if (spec.schema[relative]!.type === 'code') throw configError(spec.prefix + relative, 'can only be given in code', source, spec.backend);
    out.set(spec.prefix + relative, { raw, source });
  }
  return out;
}

/** Every value a layer sets, by flat key; an unknown key throws, naming the key, the layer and the key meant. */
function layerEntries(spec: ResolveSpec, layer: ConfigLayer): Given {
  if (layer.layer === 'env') return envEntries(spec, layer);
  const { prefix, schema } = spec;
  const source = sourceOfLayer(layer);
  const flat = new Map<string, unknown>();
  if (isFlat(layer.values, prefix)) for (const [k, v] of Object.entries(layer.values)) flat.set(k, v);
  else {
    // a map or a value only code gives is taken whole, whatever its shape
    const whole = (key: string) => ['map', 'code'].includes(specOf(schema, key.slice(prefix.length))?.type ?? '');
    try {
      flattenObject(prefix, layer.values as Record<string, unknown>, flat, whole);
    } catch (err) {
      if (err instanceof OptionProblem) throw configError(err.key, err.rule, source, spec.backend);
      throw err;
    }
  }
  const out: Given = new Map();
  for (const [key, raw] of flat) {
    if (raw === undefined) continue;
    const option = specOf(schema, key.slice(prefix.length));
    if (!option) {
      const foreign = spec.foreign?.(key);
      if (foreign) throw configError(key, foreign, source, spec.backend);
      const known = Object.keys(schema).map((k) => prefix + k);
      throw configError(key, `unknown key; ${unknownNameAdvice(key, known, 'keys')}`, source, spec.backend);
    }
    if (option.type === 'code' && (layer.layer === 'file' || layer.layer === 'flag')) throw configError(key, 'can only be given in code', source, spec.backend);
    out.set(key, { raw, source });
  }
  return out;
}

/** Puts a value at its nested place; `made` collects the objects made on the way, which are frozen once filled. */
function place(out: Record<string, unknown>, relative: string, value: unknown, made: Record<string, unknown>[]): void {
  const path = relative.split('.');
  let node = out;
  for (const part of path.slice(0, -1)) {
    if (!Object.hasOwn(node, part)) made.push((node[part] = {}) as Record<string, unknown>);
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
