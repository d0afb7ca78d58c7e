import { type ConfigSource, createRegistry, type Registry } from '@rollcall/core';
import type { RecordStore } from '@rollcall/core/spi';
import type { SqlOptions, SqlRecordStore, SqlRow, SqlValue } from '@rollcall/sql';
import { afterEach } from 'vitest';

/** What `sqlDesignConformance` needs from a SQL backend. */
export interface SqlDesignConformanceOptions {
  /** `mysql`, `sqlite`. */
  name: string;
  /** Opens a store on the test database with these SQL options over the defaults. */
  openStore(cluster: string, options: Partial<SqlOptions> & { tablePrefix: string }): Promise<SqlRecordStore>;
  /** The object-form configuration of a registry on the test database, for `createRegistry`. */
  registryConfig(cluster: string, options: Partial<SqlOptions> & { tablePrefix: string }): ConfigSource;
  /** Runs SQL as an administrator on a connection of its own, as a person editing rows by hand would. */
  exec(sql: string, params?: readonly SqlValue[]): Promise<SqlRow[]>;
  /**
   * The configuration of a registry as a user the server lets only SELECT, like
   * `registryConfig`. Absent (sqlite has no users): the read-only-user case is skipped.
   */
  readOnlyUserConfig?(cluster: string, options: Partial<SqlOptions> & { tablePrefix: string }): ConfigSource;
}

/** What every SQL design case gets: the backend's options, and stores and registries the suite closes after each case. */
export interface SqlDesignHarness {
  name: string;
  options: SqlDesignConformanceOptions;
  open(cluster: string, opts: Partial<SqlOptions> & { tablePrefix: string }): Promise<SqlRecordStore>;
  registry(cluster: string, identity: string, opts: Partial<SqlOptions> & { tablePrefix: string }): Promise<Registry>;
  /** Closed after each case. */
  stores: RecordStore[];
  /** Closed after each case. */
  registries: Registry[];
}

/** The harness, with the after-each close registered in the calling describe scope. */
export function createSqlDesignHarness(options: SqlDesignConformanceOptions): SqlDesignHarness {
  const stores: RecordStore[] = [];
  const registries: Registry[] = [];
  afterEach(async () => {
    await Promise.allSettled(registries.splice(0).map((r) => r.close()));
    await Promise.allSettled(stores.splice(0).map((s) => s.close()));
  });
  return {
    name: options.name,
    options,
    stores,
    registries,
    async open(cluster, opts) {
      const store = await options.openStore(cluster, opts);
      stores.push(store);
      return store;
    },
    async registry(cluster, identity, opts) {
      const r = await createRegistry({ ...(options.registryConfig(cluster, opts) as object), identity } as ConfigSource);
      registries.push(r);
      return r;
    },
  };
}

let counter = 0;
/** A table prefix no other case uses. */
export function uniquePrefix(): string {
  return `t${process.pid.toString(36)}${Date.now().toString(36).slice(-4)}${(counter++).toString(36)}_`;
}

/** Bound of the waits in these cases, milliseconds: a poll interval is 100–1000 ms. */
export const WAIT_MS = 10_000;

export const codeOf = async (promise: Promise<unknown>): Promise<string | undefined> =>
  promise.then(
    () => undefined,
    (err: { code?: string }) => err.code ?? 'no code',
  );

/** The code and message a store open failed with (`connected` when it opened: the store is closed after the case). */
export async function codeAndMessage(promise: Promise<RecordStore>, stores: RecordStore[]): Promise<{ code: string; message: string }> {
  return promise.then(
    (s) => {
      stores.push(s);
      return { code: 'connected', message: '' };
    },
    (e: Error & { code?: string }) => ({ code: e.code ?? 'no code', message: e.message }),
  );
}
