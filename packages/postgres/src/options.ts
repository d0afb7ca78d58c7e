import type { PluginOptionsInput } from '@rollcall/core';
import type { OptionSchema } from '@rollcall/core/spi';
import { sqlOptions, type SqlOptions, sqlTlsOptions, type SqlTlsOptions, tlsOptionsProblem } from '@rollcall/sql';
import { parsePostgresUrl, URL_KEYS, type UrlParts } from './url.js';

/** TLS to the server: the shared SQL backends' `tls.*` keys. */
export type PostgresTlsOptions = SqlTlsOptions;

/** `registry.postgres.*`: where the database is, who connects, and the keys every SQL backend has. */
export interface PostgresOptions extends SqlOptions {
  /**
   * A connection string, `postgres://user:password@host:port/database` (or
   * `postgresql://`), every part optional and percent-encoded; no query
   * parameters. Instead of, not besides, the keys it holds: a part given here
   * and as its own key is INVALID_CONFIG naming both. Secret (it may hold the
   * password). Default none.
   */
  readonly url?: string;
  /** Server host name or address. Default `localhost` (unless the url gives it). */
  readonly host?: string;
  /** Server TCP port. Default 5432 (unless the url gives it). */
  readonly port?: number;
  /** The database user. Required, here or in the url. */
  readonly user?: string;
  /** The user's password. Secret: never logged or shown in errors. Default empty (unless the url gives it). */
  readonly password?: string;
  /** The database holding Rollcall's tables; it must exist. Required, here or in the url. */
  readonly database?: string;
  /** The schema (namespace) of the tables; it must exist. Default `public`. */
  readonly schema: string;
  /** Connections in the pool, besides the one listening connection. Default 5. */
  readonly poolSize: number;
  /** Bound on opening one connection (TCP, TLS, login), milliseconds. Default 5000. */
  readonly connectTimeoutMs: number;
  /**
   * Interval of the `SELECT 1` on the listening connection, milliseconds. A
   * connection that died silently (half-open: no FIN, no RST, as behind a
   * failed NAT or a cut cable) is noticed within `keepAliveIntervalMs +
   * registry.requestTimeoutMs` (15 s with the defaults), when that `SELECT 1`
   * times out; until then watches may miss writes, then the poller reads what
   * they missed and a new connection listens. Default 10000.
   */
  readonly keepAliveIntervalMs: number;
  /**
   * How watches learn of writes. `listen` (default): one connection outside the
   * pool LISTENs and the change table is read once per notified write.
   * `poll`: no listening connection; the change table is read every
   * `pollIntervalMs`, for a server reached through a transaction-pooling proxy
   * (PgBouncer `pool_mode=transaction`) that does not keep a LISTEN.
   */
  readonly changeFeed: 'listen' | 'poll';
  readonly tls: PostgresTlsOptions;
  /**
   * How often the change table is read, milliseconds: with `changeFeed: listen`
   * only while the listening connection is down; with `poll`, always. Default 1000.
   */
  readonly pollIntervalMs: number;
}

export const POSTGRES_POLL_INTERVAL_MS = 1000;

const nonEmpty = (v: string) => (v === '' ? 'must not be empty' : undefined);
/** A name that needs no quoting: PostgreSQL folds unquoted names to lower case. */
const plainName = (v: string) => (/^[a-z_][a-z0-9_$]{0,62}$/.test(v) ? undefined : '1-63 lower-case letters, digits, _ or $, not starting with a digit');

/** The `registry.postgres.*` keys. */
export const postgresOptions: OptionSchema = {
  // No defaults here for the keys a url can hold: a default would be indistinguishable from a key given twice.
  url: { type: 'string', secret: true, doc: 'Connection string postgres://user:password@host:port/database (secret); instead of those keys, not besides.' },
  host: { type: 'string', doc: 'Server host name or address. Default localhost.', check: nonEmpty },
  port: { type: 'integer', min: 1, max: 65535, doc: 'Server TCP port. Default 5432.' },
  user: { type: 'string', doc: 'The database user. Required, here or in the url.', check: nonEmpty },
  password: { type: 'string', secret: true, doc: "The user's password (secret). Default empty." },
  database: { type: 'string', doc: 'The existing database that holds the tables. Required, here or in the url.', check: plainName },
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
  changeFeed: {
    type: 'enum',
    values: ['listen', 'poll'],
    default: 'listen',
    doc: 'How watches learn of writes: listen (LISTEN/NOTIFY on one connection) or poll (every pollIntervalMs, for a transaction-pooling proxy). Default listen.',
  },
  ...sqlTlsOptions,
  ...sqlOptions({ pollIntervalMs: POSTGRES_POLL_INTERVAL_MS }),
};

/** Where to connect and as whom: the url's parts and the keys together, defaults applied. */
export interface PostgresConnection {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string;
}

/** The connection of validated options (see {@link validatePostgresOptions}). */
export function postgresConnection(options: PostgresOptions): PostgresConnection {
  const fromUrl = options.url === undefined ? {} : (parsePostgresUrl(options.url) as UrlParts);
  return {
    host: options.host ?? fromUrl.host ?? 'localhost',
    port: options.port ?? fromUrl.port ?? 5432,
    user: options.user ?? fromUrl.user ?? '',
    password: options.password ?? fromUrl.password ?? '',
    database: options.database ?? fromUrl.database ?? '',
  };
}

/**
 * Cross-key rules: a url that parses, no part of it given again as a key, a
 * user and a database from one or the other; TLS files only with TLS on, a
 * certificate and its key together.
 */
export function validatePostgresOptions(options: PostgresOptions): { key: string; rule: string } | undefined {
  const fromUrl = options.url === undefined ? {} : parsePostgresUrl(options.url);
  if (typeof fromUrl === 'string') return { key: 'url', rule: fromUrl };
  for (const key of URL_KEYS) {
    if (fromUrl[key] !== undefined && options[key] !== undefined) {
      return { key, rule: `given twice, in registry.postgres.url and as registry.postgres.${key}; give it in one place` };
    }
  }
  if (fromUrl.port !== undefined && fromUrl.port < 1) return { key: 'url', rule: 'the port must be 1-65535' };
  if (fromUrl.database !== undefined && plainName(fromUrl.database)) return { key: 'url', rule: `the database name is not valid: ${plainName(fromUrl.database)}` };
  const connection = postgresConnection(options);
  if (connection.user === '') return { key: 'user', rule: 'is required (or give it in registry.postgres.url)' };
  if (connection.database === '') return { key: 'database', rule: 'is required (or give it in registry.postgres.url)' };
  return tlsOptionsProblem(options.tls);
}

declare module '@rollcall/core' {
  /** `postgres: { ... }` in the object form, typed by this package: a misspelt key fails to compile. */
  interface RegistryBackendSections {
    postgres: PluginOptionsInput<PostgresOptions>;
  }
}
