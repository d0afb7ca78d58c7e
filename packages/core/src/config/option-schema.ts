import { ConfigurationError } from '../errors.js';

/** One configuration key: its type, its default and its rule. */
export type OptionSpec =
  | { type: 'string'; default?: string; required?: boolean; secret?: boolean; doc: string; check?: (value: string) => string | undefined }
  | { type: 'integer'; default?: number; required?: boolean; min?: number; max?: number; doc: string }
  | { type: 'boolean'; default?: boolean; required?: boolean; doc: string }
  | { type: 'enum'; values: readonly string[]; default?: string; required?: boolean; doc: string }
  | { type: 'list'; default?: readonly string[]; required?: boolean; doc: string };

/** A section's keys, relative and dotted (`tls.caFile`), to their specs. */
export type OptionSchema = Readonly<Record<string, OptionSpec>>;

/** Converts a flat key to its environment name: `registry.election.leaseDurationMs` → `REGISTRY_ELECTION_LEASE_DURATION_MS`. */
export function envName(flatKey: string): string {
  return flatKey.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/[.-]/g, '_').toUpperCase();
}

function fail(key: string, rule: string): never {
  throw new ConfigurationError(`${key}: ${rule}`, { key });
}

/**
 * Checks and converts one value. Values from the flat and environment forms are
 * strings and are parsed; values of the object form must already have the type.
 * Secret values never appear in a message.
 * @internal
 */
export function coerceOption(key: string, spec: OptionSpec, raw: unknown): unknown {
  const shown = spec.type === 'string' && spec.secret ? '<secret>' : JSON.stringify(raw);
  switch (spec.type) {
    case 'string': {
      if (typeof raw !== 'string') fail(key, `expected a string, got ${typeof raw}`);
      const problem = spec.check?.(raw);
      if (problem) fail(key, `${shown} is not valid: ${problem}`);
      return raw;
    }
    case 'integer': {
      const value = typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw;
      if (typeof value !== 'number' || !Number.isInteger(value)) fail(key, `expected an integer, got ${shown}`);
      if (spec.min !== undefined && value < spec.min) fail(key, `must be at least ${spec.min}, got ${value}`);
      if (spec.max !== undefined && value > spec.max) fail(key, `must be at most ${spec.max}, got ${value}`);
      return value;
    }
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true') return true;
      if (raw === 'false') return false;
      return fail(key, `expected true or false, got ${shown}`);
    }
    case 'enum': {
      if (typeof raw !== 'string' || !spec.values.includes(raw)) fail(key, `must be one of ${spec.values.join(', ')}, got ${shown}`);
      return raw;
    }
    case 'list': {
      const value = typeof raw === 'string' ? raw.split(',').map((s) => s.trim()).filter(Boolean) : raw;
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v.length > 0)) fail(key, `expected a list of strings (or one comma-separated string), got ${shown}`);
      return Object.freeze([...value]);
    }
  }
}

/**
 * Validates a section's flat values against `schema`, with defaults applied:
 * unknown keys, wrong types and missing required keys are errors naming the key.
 * Returns the section as a frozen nested object (`tls.caFile` → `{ tls: { caFile } }`).
 * @internal
 */
export function resolveSection(prefix: string, schema: OptionSchema, values: ReadonlyMap<string, unknown>): Readonly<Record<string, unknown>> {
  for (const key of values.keys()) {
    if (!(key in schema)) fail(`${prefix}${key}`, `unknown key; known keys are ${Object.keys(schema).map((k) => prefix + k).join(', ')}`);
  }
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(schema)) {
    const flatKey = `${prefix}${key}`;
    const value = values.has(key) ? coerceOption(flatKey, spec, values.get(key)) : spec.default;
    if (value === undefined) {
      if (spec.required) fail(flatKey, 'is required');
      continue;
    }
    const path = key.split('.');
    let node = out;
    for (const part of path.slice(0, -1)) node = (node[part] ??= {}) as Record<string, unknown>;
    node[path[path.length - 1]!] = value;
  }
  return deepFreeze(out);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * Flattens the object form to dotted keys under `prefix`: nested plain objects
 * become `a.b`, anything else (arrays included) is a value; undefined values
 * are left out. A dotted key in the object form is an error.
 */
export function flattenObject(prefix: string, node: Record<string, unknown>, into = new Map<string, unknown>()): Map<string, unknown> {
  for (const [k, v] of Object.entries(node)) {
    if (k.includes('.')) throw new ConfigurationError(`${prefix}${k}: a dotted key in the object form; use nested objects, or the flat form with every key starting registry.`, { key: `${prefix}${k}` });
    if (isPlainObject(v)) flattenObject(`${prefix}${k}.`, v, into);
    else if (v !== undefined) into.set(`${prefix}${k}`, v);
  }
  return into;
}

/** @internal */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
