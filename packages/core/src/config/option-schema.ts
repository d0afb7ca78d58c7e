/**
 * One configuration key: its type, its default and its rule. A key whose name
 * holds `password`, `token`, `secret` or `credential`, or that says `secret`,
 * never has its value shown in a message.
 */
export type OptionSpec =
  | { type: 'string'; default?: string; required?: boolean; secret?: boolean; doc: string; check?: (value: string) => string | undefined }
  | { type: 'integer'; default?: number; required?: boolean; min?: number; max?: number; doc: string }
  /** A finite number, fractions allowed; `above`: it must be greater than this. */
  | { type: 'number'; default?: number; required?: boolean; above?: number; doc: string }
  | { type: 'boolean'; default?: boolean; required?: boolean; doc: string }
  | { type: 'enum'; values: readonly string[]; default?: string; required?: boolean; doc: string }
  | { type: 'list'; default?: readonly string[]; required?: boolean; doc: string }
  /** Names of the caller's choosing to integers (`capacity.perType: { report: 2 }`): its keys are not the schema's. Not from a string. */
  | { type: 'map'; default?: Readonly<Record<string, number>>; required?: boolean; min?: number; doc: string }
  /** A value only code can give (a client, a function, a clock), passed on as it is; a file, a variable or a flag cannot set it. */
  | { type: 'code'; default?: unknown; required?: boolean; doc: string; check?: (value: unknown) => string | undefined };

/** A section's keys, relative and dotted (`tls.caFile`), to their specs. */
export type OptionSchema = Readonly<Record<string, OptionSpec>>;

/** Converts a flat key to its environment name: `registry.election.leaseDurationMs` → `REGISTRY_ELECTION_LEASE_DURATION_MS`. */
export function envName(flatKey: string): string {
  return flatKey.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/[.-]/g, '_').toUpperCase();
}

const SECRET_NAME = /password|passwd|token|secret|credential/i;

/** Whether a key's value must never be shown: its spec says so, or its last segment names a secret. @internal */
export function isSecret(key: string, spec?: OptionSpec): boolean {
  return (spec?.type === 'string' && spec.secret === true) || SECRET_NAME.test(key.slice(key.lastIndexOf('.') + 1));
}

/** A value as a message may show it: `<secret>` for a secret key. @internal */
export function shownValue(key: string, spec: OptionSpec | undefined, raw: unknown): string {
  if (isSecret(key, spec)) return '<secret>';
  if (typeof raw === 'function') return 'a function';
  try {
    return JSON.stringify(raw) ?? String(raw);
  } catch {
    return String(raw);
  }
}

/** A broken rule of one key, before the source is known. @internal */
export class OptionProblem extends Error {
  constructor(
    readonly key: string,
    readonly rule: string,
  ) {
    super(`${key}: ${rule}`);
  }
}

function fail(key: string, rule: string): never {
  throw new OptionProblem(key, rule);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Checks and converts one value. Values from the flat and environment forms are
 * strings and are parsed; values of the object form must already have the type.
 * Secret values never appear in a message. Throws {@link OptionProblem}.
 * @internal
 */
export function coerceOption(key: string, spec: OptionSpec, raw: unknown): unknown {
  const shown = shownValue(key, spec, raw);
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
    case 'number': {
      const value = typeof raw === 'string' && raw.trim() !== '' ? Number(raw.trim()) : raw;
      if (typeof value !== 'number' || !Number.isFinite(value)) fail(key, `expected a number, got ${shown}`);
      if (spec.above !== undefined && !(value > spec.above)) fail(key, `must be greater than ${spec.above}, got ${value}`);
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
    case 'map': {
      if (!isPlainObject(raw)) fail(key, `expected an object of names to integers, got ${shown}`);
      for (const [name, value] of Object.entries(raw)) {
        if (typeof value !== 'number' || !Number.isInteger(value)) fail(`${key}.${name}`, `expected an integer, got ${shownValue(name, undefined, value)}`);
        if (spec.min !== undefined && value < spec.min) fail(`${key}.${name}`, `must be at least ${spec.min}, got ${value}`);
      }
      return Object.freeze({ ...raw });
    }
    case 'code': {
      const problem = spec.check?.(raw);
      if (problem) fail(key, `is not valid: ${problem}`);
      return raw;
    }
  }
}

/**
 * Flattens the object form to dotted keys under `prefix`: nested plain objects
 * become `a.b`, anything else (arrays included) is a value; undefined values
 * are left out. A dotted key in the object form is an error. `leaf(key)`: a
 * key whose value is taken whole even when it is an object (a `map` or `code`
 * key of the schema).
 */
export function flattenObject(prefix: string, node: Record<string, unknown>, into = new Map<string, unknown>(), leaf: (key: string) => boolean = () => false): Map<string, unknown> {
  for (const [k, v] of Object.entries(node)) {
    const key = `${prefix}${k}`;
    if (k.includes('.')) throw new OptionProblem(key, `a dotted key in the object form; use nested objects${prefix ? `, or the flat form with every key starting ${prefix.slice(0, prefix.indexOf('.') + 1)}` : ''}`);
    if (isPlainObject(v) && !leaf(key)) flattenObject(`${key}.`, v, into, leaf);
    else if (v !== undefined) into.set(key, v);
  }
  return into;
}

/** @internal */
export function deepFreeze<T>(value: T): T {
  if (isPlainObject(value) || Array.isArray(value)) {
    if (Object.isFrozen(value)) return value;
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
