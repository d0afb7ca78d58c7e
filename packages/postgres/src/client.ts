import { createRequire } from 'node:module';
import { readTlsFiles, type SqlRow, type SqlValue, type TlsFiles } from '@rollcall/sql';
import { BACKEND } from './errors.js';
import { postgresConnection, type PostgresOptions } from './options.js';

/** What a statement answers (pg's QueryResult, the part we read). */
export interface QueryResult {
  rows: SqlRow[];
  /** Rows a data-changing statement affected; null for some utility statements. */
  rowCount: number | null;
}

/** The slice of pg's API this backend uses: parameters travel apart from the text ($1, $2, ...), never escaped into it. */
export interface Queryable {
  query(text: string, values?: readonly SqlValue[]): Promise<QueryResult>;
}

export interface PoolClient extends Queryable {
  /** Gives the connection back; with an error, closes it instead. */
  release(destroy?: Error | boolean): void;
  on(event: 'error', listener: (err: unknown) => void): void;
  removeListener(event: 'error', listener: (err: unknown) => void): void;
}

export interface Pool extends Queryable {
  connect(): Promise<PoolClient>;
  end(): Promise<void>;
  on(event: 'error', listener: (err: unknown) => void): void;
}

/** One connection of its own, outside the pool: the listening connection. */
export interface Client extends Queryable {
  connect(): Promise<void>;
  end(): Promise<void>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): void;
  on(event: 'error', listener: (err: unknown) => void): void;
  on(event: 'end', listener: () => void): void;
}

/** The pg connection settings we pass (a pool's and the listening connection's). */
export interface PgConfig {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  /** `-c search_path=<schema>`: the unqualified table names resolve in the configured schema. */
  options: string;
  connectionTimeoutMillis: number;
  keepAlive: boolean;
  application_name: string;
  ssl?: TlsFiles;
}

const pg = createRequire(import.meta.url)('pg') as {
  Pool: new (config: Record<string, unknown>) => Pool;
  Client: new (config: Record<string, unknown>) => Client;
};

/** A pg pool; the dialect adds the settings every call relies on to `config`. */
export function createPool(config: Record<string, unknown>): Pool {
  return new pg.Pool(config);
}

/** A single pg connection (not yet connected). */
export function createClient(config: Record<string, unknown>): Client {
  return new pg.Client(config);
}

/** `host:port`: how errors name the server. */
export function serverName(options: PostgresOptions): string {
  const { host, port } = postgresConnection(options);
  return `${host}:${port}`;
}

/** The connection settings of the options: where the server is, who connects, TLS. */
export function pgConfig(options: PostgresOptions): PgConfig {
  const ssl = readTlsFiles(BACKEND, options.tls);
  const { host, port, user, password, database } = postgresConnection(options);
  return {
    host,
    port,
    user,
    password,
    database,
    options: `-c search_path=${options.schema}`,
    connectionTimeoutMillis: options.connectTimeoutMs,
    keepAlive: true,
    application_name: 'rollcall',
    ...(ssl ? { ssl } : {}),
  };
}

/** `?` placeholders (the shared SQL's) as PostgreSQL's `$1, $2, ...`; Rollcall's statements have no `?` in a literal. */
export function numberedPlaceholders(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}
