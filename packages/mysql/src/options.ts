import type { PluginOptionsInput } from '@rollcall/core';
import type { OptionSchema } from '@rollcall/core/spi';
import { sqlOptions, type SqlOptions, sqlTlsOptions, type SqlTlsOptions, tlsOptionsProblem } from '@rollcall/sql';

/** TLS to the server: the shared SQL backends' `tls.*` keys. */
export type MysqlTlsOptions = SqlTlsOptions;

/** `registry.mysql.*`: where the database is, who connects, and the keys every SQL backend has. */
export interface MysqlOptions extends SqlOptions {
  /** Server host name or address. Default `localhost`. */
  readonly host: string;
  /** Server TCP port. Default 3306. */
  readonly port: number;
  /** A unix socket of the server; when set, `host` and `port` are not used. */
  readonly socketPath?: string;
  /** The database user. Required. */
  readonly user: string;
  /** The user's password. Secret: never logged or shown in errors. Default empty. */
  readonly password: string;
  /** The database (schema) holding Rollcall's tables; it must exist. Required. */
  readonly database: string;
  /** Connections in the pool. Default 5. */
  readonly poolSize: number;
  /** Bound on opening one connection (TCP, TLS, login), milliseconds. Default 5000. */
  readonly connectTimeoutMs: number;
  readonly tls: MysqlTlsOptions;
  /** How often the change table is read for the watch, milliseconds. Default 200. */
  readonly pollIntervalMs: number;
}

export const MYSQL_POLL_INTERVAL_MS = 200;

const nonEmpty = (v: string) => (v === '' ? 'must not be empty' : undefined);

/** The `registry.mysql.*` keys. */
export const mysqlOptions: OptionSchema = {
  host: { type: 'string', default: 'localhost', doc: 'Server host name or address.', check: nonEmpty },
  port: { type: 'integer', default: 3306, min: 1, max: 65535, doc: 'Server TCP port.' },
  socketPath: { type: 'string', doc: 'A unix socket of the server; replaces host and port.', check: nonEmpty },
  user: { type: 'string', required: true, doc: 'The database user.', check: nonEmpty },
  password: { type: 'string', default: '', secret: true, doc: "The user's password (secret)." },
  database: {
    type: 'string',
    required: true,
    doc: 'The existing database that holds the tables.',
    check: (v) => (/^[A-Za-z0-9_$]{1,64}$/.test(v) ? undefined : '1-64 letters, digits, _ or $'),
  },
  poolSize: { type: 'integer', default: 5, min: 1, max: 100, doc: 'Connections in the pool.' },
  connectTimeoutMs: { type: 'integer', default: 5000, min: 100, max: 120_000, doc: 'Bound on opening one connection, ms.' },
  ...sqlTlsOptions,
  ...sqlOptions({ pollIntervalMs: MYSQL_POLL_INTERVAL_MS }),
};

/** Cross-key rules: TLS files only with TLS on, a certificate and its key together. */
export function validateMysqlOptions(options: MysqlOptions): { key: string; rule: string } | undefined {
  return tlsOptionsProblem(options.tls);
}

declare module '@rollcall/core' {
  /** `mysql: { ... }` in the object form, typed by this package: a misspelt key fails to compile. */
  interface RegistryBackendSections {
    mysql: PluginOptionsInput<MysqlOptions>;
  }
}
