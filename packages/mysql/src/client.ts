import { createRequire } from 'node:module';
import { readTlsFiles, type SqlRow, type SqlValue, type TlsFiles } from '@rollcall/sql';
import { BACKEND } from './errors.js';
import type { MysqlOptions } from './options.js';

/** What a data-changing statement answers (mysql2's ResultSetHeader). */
export interface ResultHeader {
  affectedRows: number;
  insertId: number;
}

type QueryResult = [SqlRow[] | ResultHeader, unknown];
type QueryOptions = { sql: string; timeout?: number };

/** The slice of mysql2's promise API this backend uses. */
export interface Queryable {
  /** A prepared statement: parameters travel in the binary protocol, never escaped into the text. */
  execute(options: QueryOptions, params?: readonly SqlValue[]): Promise<QueryResult>;
  /** Statements without parameters (transaction control, DDL). */
  query(options: QueryOptions): Promise<QueryResult>;
}

interface PoolConnection extends Queryable {
  release(): void;
  destroy(): void;
}

export interface Pool extends Queryable {
  getConnection(): Promise<PoolConnection>;
  end(): Promise<void>;
  /** A new connection, before anyone borrows it; mysql2 hands over its callback-style core connection. */
  on(event: 'connection', listener: (connection: { query(sql: string, callback: (err: unknown) => void): void }) => void): void;
}

/** The mysql2 pool settings we pass. */
export interface MysqlPoolConfig {
  host?: string;
  port?: number;
  socketPath?: string;
  user: string;
  password: string;
  database: string;
  connectionLimit: number;
  connectTimeout: number;
  ssl?: TlsFiles;
}

const mysql = createRequire(import.meta.url)('mysql2/promise') as {
  createPool(config: Record<string, unknown>): Pool;
};

/** A mysql2 promise pool; the dialect adds the settings every call relies on to `config`. */
export function createPool(config: Record<string, unknown>): Pool {
  return mysql.createPool(config);
}

/** `host:port` or the socket: how errors name the server. */
export function serverName(options: Pick<MysqlOptions, 'host' | 'port' | 'socketPath'>): string {
  return options.socketPath ?? `${options.host}:${options.port}`;
}

/** The pool settings of the options: where the server is, who connects, TLS. */
export function poolConfig(options: MysqlOptions): MysqlPoolConfig {
  const ssl = readTlsFiles(BACKEND, options.tls);
  return {
    ...(options.socketPath ? { socketPath: options.socketPath } : { host: options.host, port: options.port }),
    user: options.user,
    password: options.password,
    database: options.database,
    connectionLimit: options.poolSize,
    connectTimeout: options.connectTimeoutMs,
    ...(ssl ? { ssl } : {}),
  };
}
