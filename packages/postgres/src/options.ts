import type { OptionSchema, PluginOptionsInput } from '@rollcall/core/spi';
import { sqlOptions, type SqlOptions, sqlTlsOptions, type SqlTlsOptions, tlsOptionsProblem } from '@rollcall/sql';

/** TLS to the server: the shared SQL backends' `tls.*` keys. */
export type PostgresTlsOptions = SqlTlsOptions;

/** `registry.postgres.*`: where the database is, who connects, and the keys every SQL backend has. */
export interface PostgresOptions extends SqlOptions {
  /** Server host name or address. Default `localhost`. */
  readonly host: string;
  /** Server TCP port. Default 5432. */
  readonly port: number;
  /** The database user. Required. */
  readonly user: string;
  /** The user's password. Secret: never logged or shown in errors. Default empty. */
  readonly password: string;
  /** The database holding Rollcall's tables; it must exist. Required. */
  readonly database: string;
  /** The schema (namespace) of the tables; it must exist. Default `public`. */
  readonly schema: string;
  /** Connections in the pool, besides the one listening connection. Default 5. */
  readonly poolSize: number;
  /** Bound on opening one connection (TCP, TLS, login), milliseconds. Default 5000. */
  readonly connectTimeoutMs: number;
  /**
   * Interval of the `SELECT 1` on the listening connection, milliseconds: how
   * soon a silently dead connection is found (a notification could be missed
   * meanwhile). Default 10000.
   */
  readonly keepAliveIntervalMs: number;
  readonly tls: PostgresTlsOptions;
  /** How often the change table is read while the LISTEN connection is down (only then), milliseconds. Default 1000. */
  readonly pollIntervalMs: number;
}

export const POSTGRES_POLL_INTERVAL_MS = 1000;

const nonEmpty = (v: string) => (v === '' ? 'must not be empty' : undefined);
/** A name that needs no quoting: PostgreSQL folds unquoted names to lower case. */
const plainName = (v: string) => (/^[a-z_][a-z0-9_$]{0,62}$/.test(v) ? undefined : '1-63 lower-case letters, digits, _ or $, not starting with a digit');

/** The `registry.postgres.*` keys. */
export const postgresOptions: OptionSchema = {
  host: { type: 'string', default: 'localhost', doc: 'Server host name or address.', check: nonEmpty },
  port: { type: 'integer', default: 5432, min: 1, max: 65535, doc: 'Server TCP port.' },
  user: { type: 'string', required: true, doc: 'The database user.', check: nonEmpty },
  password: { type: 'string', default: '', secret: true, doc: "The user's password (secret)." },
  database: { type: 'string', required: true, doc: 'The existing database that holds the tables.', check: plainName },
  schema: { type: 'string', default: 'public', doc: 'The existing schema that holds the tables.', check: plainName },
  poolSize: { type: 'integer', default: 5, min: 1, max: 100, doc: 'Connections in the pool, besides the listening one.' },
  connectTimeoutMs: { type: 'integer', default: 5000, min: 100, max: 120_000, doc: 'Bound on opening one connection, ms.' },
  keepAliveIntervalMs: {
    type: 'integer',
    default: 10_000,
    min: 100,
    max: 600_000,
    doc: 'Interval of the SELECT 1 on the listening connection, ms: how soon a silently dead one is replaced. Default 10000.',
  },
  ...sqlTlsOptions,
  ...sqlOptions({ pollIntervalMs: POSTGRES_POLL_INTERVAL_MS }),
};

/** Cross-key rules: TLS files only with TLS on, a certificate and its key together. */
export function validatePostgresOptions(options: PostgresOptions): { key: string; rule: string } | undefined {
  return tlsOptionsProblem(options.tls);
}

declare module '@rollcall/core' {
  /** `postgres: { ... }` in the object form, typed by this package: a misspelt key fails to compile. */
  interface RegistryBackendSections {
    postgres: PluginOptionsInput<PostgresOptions>;
  }
}
