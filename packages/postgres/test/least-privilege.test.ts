import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { tableNames } from '@rollcall/sql';
import { createPostgresStore } from '../src/index.js';
import { postgres, testOptions, testSchema } from './support/postgres.js';

const schema = testSchema('leastpriv');
const registries: Registry[] = [];
afterEach(async () => {
  await Promise.allSettled(registries.splice(0).map((r) => r.close()));
});

const fast = { election: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 }, lock: { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 300 } };

describe('postgres: a least-privilege role', () => {
  it('with SELECT, INSERT, UPDATE and DELETE on its three tables and nothing else, announces, elects, locks, watches and purges', async () => {
    const p = `lp${process.pid}_`;
    const t = tableNames(p);
    // The tables as a DBA would create them: by the owner, once.
    await (await createPostgresStore({ cluster: 'setup', ...testOptions(schema.name, { tablePrefix: p }), requestTimeoutMs: 5000 })).close();
    // The test server's second role has only SELECT on this schema's tables and USAGE on the schema;
    // it gets the four rights Rollcall needs on these three tables, no more.
    const { readOnly, database } = postgres();
    for (const table of [t.state, t.records, t.changes]) await schema.exec(`GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO ${readOnly.user}`);
    const rights = await schema.exec(
      `SELECT has_schema_privilege(?, ?, 'CREATE') AS create_in_schema, has_database_privilege(?, ?, 'CREATE') AS create_in_database, (SELECT rolsuper OR rolcreaterole OR rolcreatedb FROM pg_roles WHERE rolname = ?) AS role_rights`,
      [readOnly.user, schema.name, readOnly.user, database, readOnly.user],
    );
    expect(rights).toEqual([{ create_in_schema: false, create_in_database: false, role_rights: false }]);

    const section = (createSchema: boolean) => {
      const { tls: _tls, ...rest } = testOptions(schema.name, { tablePrefix: p, user: readOnly.user, password: readOnly.password, createSchema, purgeIntervalMs: 1000, changeRetentionMs: 1000 });
      return rest;
    };
    // createSchema false as the README advises, and the default too: with the tables there, no DDL is attempted.
    const [a, b] = await Promise.all(
      [false, true].map(async (createSchema, i) => {
        const r = await createRegistry({ type: 'postgres', cluster: 'lp', identity: `p${i}`, requestTimeoutMs: 2000, ...fast, postgres: section(createSchema) });
        registries.push(r);
        return r;
      }),
    );
    const seen: string[] = [];
    a!.watchMembers('worker', (e) => seen.push(`${e.type}:${e.member.id}`));
    const worker = await b!.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    await waitFor(() => seen.includes('added:w1'), 10_000, 'the watch (LISTEN as this role) to see the member');
    const leader = a!.campaign('sched');
    await leader.whenElected();
    const lock = await b!.lock('job', { timeoutMs: 5000 });
    expect(lock.fencingToken).toBeGreaterThan(0);
    await lock.release();
    await worker.withdraw();
    await waitFor(() => seen.includes('removed:w1'), 10_000, 'the watch to see the withdrawal');
    // The purge (DELETE on the change table, UPDATE of the state row) ran as this role: old changes are gone.
    await waitFor(async () => Number((await schema.exec(`SELECT purged_through FROM ${t.state}`))[0]!.purged_through) > 0, 15_000, 'a purge by this role');
  });
});
