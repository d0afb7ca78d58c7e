import { envName, ConfigurationError } from '@rollcall/core';
import { type OptionSchema, type RegistryPlugin } from '@rollcall/core/spi';

/** `registry.type` of a migration. */
export const MIGRATE_TYPE = 'migrate';

/** One side of a migration, validated: a whole backend section, `{ type, <type>: { ... } }`. */
export interface MigrateSide {
  readonly type: string;
  readonly [section: string]: unknown;
}

/** `registry.migrate.*`: the backend being left and the one being moved to. */
export interface MigrateOptions {
  readonly from: MigrateSide;
  readonly to: MigrateSide;
}

/** One side of a migration as given: `type` and that backend's section, e.g. `{ type: 'zookeeper', zookeeper: { connectString } }`. */
export type MigrateSideInput = { readonly type: string } & Readonly<Record<string, unknown>>;

declare module '@rollcall/core' {
  /** `migrate: { from, to }` in the object form, typed once this package is part of a program. */
  interface RegistryBackendSections {
    /** `registry.type=migrate`: two whole backend sections, each checked by its own plugin at run time. */
    migrate: { from: MigrateSideInput; to: MigrateSideInput };
  }
}

/** A side's own section, `registry.migrate.<side>.<type>.*`. */
export type Section = Readonly<Record<string, unknown>>;

/** Two sides of one type are one backend when its plugin says they are the same location; without `sameLocation`, when the sections are equal. */
export function sameBackend(plugin: RegistryPlugin, from: MigrateSide, to: MigrateSide): boolean {
  if (from.type !== to.type) return false;
  const a = (from[from.type] ?? {}) as Section;
  const b = (to[to.type] ?? {}) as Section;
  if (plugin.sameLocation) return plugin.sameLocation(a, b);
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].every((key) => JSON.stringify(a[key]) === JSON.stringify(b[key]));
}

/**
 * Checks the two types a migration names, before their plugins load: each is
 * given, neither is `migrate` itself. Throws INVALID_CONFIG naming the key.
 */
export function assertMigrateTypes(types: { from: unknown; to: unknown }): asserts types is { from: string; to: string } {
  for (const side of ['from', 'to'] as const) {
    const key = `registry.${MIGRATE_TYPE}.${side}.type`;
    const type = types[side];
    if (type === undefined || type === '') throw new ConfigurationError(`${key}: is required: the backend to migrate ${side} (${envName(key)} in the environment form)`, { key });
    if (typeof type !== 'string') throw new ConfigurationError(`${key}: expected a string, got ${JSON.stringify(type)}`, { key });
    if (type === MIGRATE_TYPE) throw new ConfigurationError(`${key}: a migration cannot migrate ${side} a migration; name the backend itself`, { key });
  }
}

/** The schema over both sides: `<side>.type` and each side's own keys under `<side>.<type>.`. */
export function migrateSchema(sides: Readonly<Record<keyof MigrateOptions, RegistryPlugin>>): OptionSchema {
  const options: Record<string, OptionSchema[string]> = {};
  for (const [side, plugin] of Object.entries(sides)) {
    options[`${side}.type`] = { type: 'enum', values: [plugin.type], required: true, doc: `The backend to migrate ${side}.` };
    for (const [key, spec] of Object.entries(plugin.options)) options[`${side}.${plugin.type}.${key}`] = spec;
  }
  return Object.freeze(options);
}

/** Each side's own rules on its section, then one backend named twice; the broken rule and its key, relative to `registry.migrate.`. */
export function migrateProblem(sides: Readonly<Record<keyof MigrateOptions, RegistryPlugin>>, resolved: MigrateOptions): { key: string; rule: string } | undefined {
  for (const [side, plugin] of Object.entries(sides) as [keyof MigrateOptions, RegistryPlugin][]) {
    const problem = plugin.validate?.((resolved[side][plugin.type] ?? {}) as Section);
    if (problem) return { key: `${side}.${plugin.type}.${problem.key}`, rule: problem.rule };
  }
  if (sameBackend(sides.from, resolved.from, resolved.to)) {
    const how = sides.from.sameLocation ? `the same ${sides.from.type} location, as its plugin judges it` : `the same ${sides.from.type} section`;
    return { key: 'to', rule: `names the same backend as registry.migrate.from (${how}); a migration moves records between two backends` };
  }
  return undefined;
}
