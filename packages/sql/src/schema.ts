import { ConfigurationError } from '@rollcall/core';

/**
 * The layout version this package reads and writes, kept in the state table.
 * A database holding another version is refused with SCHEMA_MISMATCH.
 */
export const SCHEMA_VERSION = 1;

/** The names of the three tables, from the configured prefix. */
export interface TableNames {
  readonly prefix: string;
  /** One row (id = 1): schema version, the revision counter, how far changes were purged. */
  readonly state: string;
  /** One row per record: its key, version and JSON value. */
  readonly records: string;
  /** One row per write, id = the revision it made; the watch reads it in order. */
  readonly changes: string;
}

/** Letters, digits and `_`, starting with a letter: a prefix that needs no quoting in any dialect. */
export const TABLE_PREFIX_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,39}$/;

export const TABLE_PREFIX_RULE = '1-40 letters, digits or _, starting with a letter (e.g. rollcall_)';

/** A reason when `prefix` is not a valid table prefix. */
export function tablePrefixProblem(prefix: string): string | undefined {
  return TABLE_PREFIX_PATTERN.test(prefix) ? undefined : TABLE_PREFIX_RULE;
}

export function tableNames(prefix: string): TableNames {
  const problem = tablePrefixProblem(prefix);
  if (problem) throw new ConfigurationError(`tablePrefix ${JSON.stringify(prefix)}: ${problem}`, { key: 'tablePrefix' });
  return { prefix, state: `${prefix}state`, records: `${prefix}records`, changes: `${prefix}changes` };
}

/** Longest record key the tables hold (`member/<role>/<id>` is at most 389). */
export const MAX_KEY_LENGTH = 400;

/** Longest cluster name (a DNS-1123 label). */
export const MAX_CLUSTER_LENGTH = 63;

/**
 * Additive changes to layout version 1 since it was first released, each
 * idempotent only by being checked first (the database tells whether the
 * column is there). Tables created before get them on open when DDL is allowed
 * (`createSchema`), else the store refuses with SCHEMA_MISMATCH naming these.
 * The version stays 1: a bump would make processes of the previous release
 * refuse the tables in the middle of a rolling update, and they read and write
 * the upgraded tables correctly (they leave the new columns NULL).
 */
export function upgradeStatements(tables: TableNames): string[] {
  return [`ALTER TABLE ${tables.records} ADD COLUMN created_revision BIGINT NULL`, `ALTER TABLE ${tables.changes} ADD COLUMN created_revision BIGINT NULL`];
}

/**
 * The schema as a SQL script, for teams whose application user may not run DDL:
 * a DBA applies it once, then the application only reads and writes rows.
 */
export function schemaScript(statements: readonly string[], tables: TableNames, createdBy: string): string {
  return [
    `-- Rollcall schema version ${SCHEMA_VERSION}, tables prefixed ${tables.prefix}.`,
    '-- Apply once as a user allowed to create tables; the application user then needs',
    `-- SELECT, INSERT, UPDATE and DELETE on ${tables.state}, ${tables.records} and ${tables.changes}.`,
    '',
    ...statements.map((s) => `${s};\n`),
    `-- Tables created by an earlier release of schema version ${SCHEMA_VERSION} lack the column created_revision;`,
    '-- to upgrade them, apply only these two statements (not the script above), once:',
    ...upgradeStatements(tables).map((s) => `--   ${s};`),
    '',
    `INSERT INTO ${tables.state} (id, schema_version, revision, purged_through, created_by) VALUES (1, ${SCHEMA_VERSION}, 0, 0, '${createdBy}');`,
    '',
  ].join('\n');
}
