import { type ConfigSource, createRegistry, type Registry } from '@rollcall/core';
import type { LeaseRecord, RecordStore } from '@rollcall/core/spi';
import { SCHEMA_VERSION, tableNames, type SqlOptions, type SqlRecordStore, type SqlRow, type SqlValue } from '@rollcall/sql';
import { afterEach, describe, expect, it } from 'vitest';
import { collectWatch } from './collect-watch.js';
import { leaseRecord } from './records.js';
import { observeFor, waitFor } from './wait-for.js';

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

let counter = 0;
/** A table prefix no other case uses. */
function uniquePrefix(): string {
  return `t${process.pid.toString(36)}${Date.now().toString(36).slice(-4)}${(counter++).toString(36)}_`;
}

/** Bound of the waits below, milliseconds: a poll interval is 100–1000 ms. */
const WAIT_MS = 10_000;

const codeOf = async (promise: Promise<unknown>): Promise<string | undefined> =>
  promise.then(
    () => undefined,
    (err: { code?: string }) => err.code ?? 'no code',
  );

/**
 * The cases of `@rollcall/sql`'s design itself — schema creation and detection,
 * the revision counter, the change table, its poller and purge, rows edited by
 * hand — beyond the SPI that `storeConformance` proves. Every SQL backend
 * (`@rollcall/mysql`, `@rollcall/sqlite`) runs them on its real database. Call
 * it at the top level of a vitest file.
 */
export function sqlDesignConformance(options: SqlDesignConformanceOptions): void {
  const { name } = options;
  const stores: RecordStore[] = [];
  const registries: Registry[] = [];
  const open = async (cluster: string, opts: Partial<SqlOptions> & { tablePrefix: string }) => {
    const store = await options.openStore(cluster, opts);
    stores.push(store);
    return store;
  };
  const registry = async (cluster: string, identity: string, opts: Partial<SqlOptions> & { tablePrefix: string }) => {
    const r = await createRegistry({ ...(options.registryConfig(cluster, opts) as object), identity } as ConfigSource);
    registries.push(r);
    return r;
  };

  afterEach(async () => {
    await Promise.allSettled(registries.splice(0).map((r) => r.close()));
    await Promise.allSettled(stores.splice(0).map((s) => s.close()));
  });

  describe(`${name}: schema`, () => {
    it('is created on first use: the three tables and a state row naming the version and its creator', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      await open('c1', { tablePrefix: prefix });
      const [state] = await options.exec(`SELECT schema_version, revision, purged_through, created_by FROM ${t.state} WHERE id = 1`);
      expect(Number(state!.schema_version)).toBe(SCHEMA_VERSION);
      expect(Number(state!.revision)).toBe(0);
      expect(String(state!.created_by)).toMatch(new RegExp(`^@rollcall/${name} `));
      expect(await options.exec(`SELECT COUNT(*) AS n FROM ${t.records}`)).toEqual([expect.objectContaining({})]);
      expect(await options.exec(`SELECT COUNT(*) AS n FROM ${t.changes}`)).toEqual([expect.objectContaining({})]);
    });

    it('four stores with their own connections creating the same schema at once all connect and share it', async () => {
      const prefix = uniquePrefix();
      // Different settings, so each opens connections of its own and races the others.
      const [a, b] = (await Promise.all([150, 160, 170, 180].map((pollIntervalMs, i) => open(`c${i + 1}`, { tablePrefix: prefix, pollIntervalMs })))) as unknown as [SqlRecordStore, SqlRecordStore];
      expect(a.database).not.toBe(b.database);
      await a.create('lock/x', leaseRecord('a'));
      expect((await b.list('')).records).toEqual([]);
      expect((await options.exec(`SELECT COUNT(*) AS n FROM ${tableNames(prefix).state}`)).map((r) => Number(r.n))).toEqual([1]);
    });

    it('a state row of another schema version is named in SCHEMA_MISMATCH, and nothing is changed', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      const first = await open('c1', { tablePrefix: prefix });
      await first.create('lock/x', leaseRecord('a'));
      await first.close();
      await options.exec(`UPDATE ${t.state} SET schema_version = 2, created_by = '@rollcall/${name} 9.0.0' WHERE id = 1`);
      const before = await options.exec(`SELECT record_key, record_version, record_value FROM ${t.records}`);
      const err = await options.openStore('c1', { tablePrefix: prefix }).then(
        (s) => (stores.push(s), undefined),
        (e: Error & { code: string }) => e,
      );
      expect(err?.code).toBe('SCHEMA_MISMATCH');
      expect(err?.message).toContain('schema version 2');
      expect(err?.message).toContain(`@rollcall/${name} 9.0.0`);
      expect(err?.message).toMatch(/^\[rollcall\] \[\w+\] /);
      expect(await options.exec(`SELECT record_key, record_version, record_value FROM ${t.records}`)).toEqual(before);
      expect(Number((await options.exec(`SELECT schema_version FROM ${t.state}`))[0]!.schema_version)).toBe(2);
    });

    it('tables of a foreign layout under the prefix are SCHEMA_MISMATCH naming the table, never used', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      await options.exec(`CREATE TABLE ${t.state} (id INT NOT NULL PRIMARY KEY, name VARCHAR(20))`);
      const err = await codeAndMessage(options.openStore('c1', { tablePrefix: prefix }), stores);
      expect(err.code).toBe('SCHEMA_MISMATCH');
      expect(err.message).toContain(t.state);
      expect(await options.exec(`SELECT * FROM ${t.state}`)).toEqual([]);

      const prefix2 = uniquePrefix();
      const t2 = tableNames(prefix2);
      await open('c1', { tablePrefix: prefix2 }).then((s) => s.close());
      await options.exec(`DROP TABLE ${t2.records}`);
      await options.exec(`CREATE TABLE ${t2.records} (k VARCHAR(20) NOT NULL PRIMARY KEY, v TEXT)`);
      const err2 = await codeAndMessage(options.openStore('c1', { tablePrefix: prefix2 }), stores);
      expect(err2.code).toBe('SCHEMA_MISMATCH');
      expect(err2.message).toContain(t2.records);
    });

    it('tables of an earlier release (no created_revision) get the column on open, and their rows read as created at their version until a write pins it', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      const first = await open('c1', { tablePrefix: prefix });
      const a = await first.create('lock/a', leaseRecord('a'));
      const a1 = await first.update('lock/a', leaseRecord('a', { n: 1 }), a.version);
      await first.close();
      // The layout the previous release created: version 1 without the column.
      await options.exec(`ALTER TABLE ${t.records} DROP COLUMN created_revision`);
      await options.exec(`ALTER TABLE ${t.changes} DROP COLUMN created_revision`);

      const refused = await codeAndMessage(options.openStore('c1', { tablePrefix: prefix, createSchema: false }), stores);
      expect(refused.code).toBe('SCHEMA_MISMATCH');
      expect(refused.message).toContain(`ALTER TABLE ${t.records} ADD COLUMN created_revision BIGINT NULL`);
      expect(refused.message).toContain(`ALTER TABLE ${t.changes} ADD COLUMN created_revision BIGINT NULL`);
      expect(await codeOf(options.exec(`SELECT created_revision FROM ${t.records}`))).toBeDefined();

      // Three processes upgrading at once all connect (one adds the column, the others find it).
      const [s1, s2] = (await Promise.all([150, 160, 170].map((pollIntervalMs) => open('c1', { tablePrefix: prefix, pollIntervalMs })))) as unknown as [SqlRecordStore, SqlRecordStore];
      const legacy = await s1.get('lock/a');
      expect(legacy).toMatchObject({ version: a1.version, created: a1.version });
      expect((await s2.list('lock/')).records[0]?.created).toBe(a1.version);
      const pinned = await s1.update('lock/a', leaseRecord('a', { n: 2 }), a1.version);
      expect(pinned.created).toBe(a1.version);
      expect((await s2.get('lock/a'))?.created).toBe(a1.version);
      const b = await s2.create('lock/b', leaseRecord('b'));
      expect(b.created).toBe(b.version);
      expect(BigInt(b.created) > BigInt(pinned.created)).toBe(true);

      // A row a process of the previous release inserts during the rolling update (created_revision NULL).
      await options.exec(`UPDATE ${t.records} SET created_revision = NULL WHERE record_key = ?`, ['lock/b']);
      expect((await s1.get('lock/b'))?.created).toBe(b.version);
      const b1 = await s1.update('lock/b', leaseRecord('b', { n: 1 }), b.version);
      expect(b1.created).toBe(b.version);
      expect(Number((await options.exec(`SELECT created_revision FROM ${t.records} WHERE record_key = ?`, ['lock/b']))[0]!.created_revision)).toBe(Number(b.version));
    });

    it('with createSchema false and no schema, connect fails SCHEMA_MISMATCH pointing at schema.sql and creates nothing', async () => {
      const prefix = uniquePrefix();
      const err = await codeAndMessage(options.openStore('c1', { tablePrefix: prefix, createSchema: false }), stores);
      expect(err.code).toBe('SCHEMA_MISMATCH');
      expect(err.message).toContain('schema.sql');
      expect(await codeOf(options.exec(`SELECT * FROM ${tableNames(prefix).state}`))).toBeDefined();
    });

    it('stores under two table prefixes in one database never see each other', async () => {
      const a = await open('c1', { tablePrefix: uniquePrefix() });
      const b = await open('c1', { tablePrefix: uniquePrefix() });
      await a.create('lock/x', leaseRecord('a'));
      expect(await b.get('lock/x')).toBeUndefined();
      expect((await b.list('')).revision).toBe('0');
    });
  });

  describe(`${name}: revisions and the change table`, () => {
    it('every write takes the next revision: versions strictly increase, also across delete and re-create, and the change ids have no gaps', async () => {
      const prefix = uniquePrefix();
      const store = await open('c1', { tablePrefix: prefix });
      const v1 = (await store.create('lock/x', leaseRecord('a'))).version;
      const v2 = (await store.update('lock/x', leaseRecord('b'), v1)).version;
      await store.delete('lock/x', v2);
      const v4 = (await store.create('lock/x', leaseRecord('c'))).version;
      expect([v1, v2, v4].map(Number)).toEqual([1, 2, 4]);
      expect(await codeOf(store.update('lock/x', leaseRecord('d'), v1))).toBe('CONFLICT');
      const rows = await options.exec(`SELECT id, record_value FROM ${tableNames(prefix).changes} ORDER BY id`);
      expect(rows.map((r) => Number(r.id))).toEqual([1, 2, 3, 4]);
      expect(rows[2]!.record_value).toBeNull();
    });

    it('concurrent writers from several stores get unique, gapless revisions, and exactly one CAS per version wins', async () => {
      const prefix = uniquePrefix();
      const writers = await Promise.all(Array.from({ length: 4 }, () => open('c1', { tablePrefix: prefix })));
      await Promise.all(Array.from({ length: 20 }, (_, i) => writers[i % 4]!.create(`member/w/m${i}`, leaseRecord(`m${i}`))));
      const base = await writers[0]!.create('lock/counter', leaseRecord('x', 0));
      let current = base;
      for (let round = 0; round < 5; round++) {
        const attempts = await Promise.allSettled(writers.map((w, i) => w.update('lock/counter', leaseRecord(`w${i}`, round + 1), current.version)));
        const won = attempts.filter((a) => a.status === 'fulfilled');
        expect(won).toHaveLength(1);
        for (const lost of attempts.filter((a) => a.status === 'rejected')) expect((lost as PromiseRejectedResult).reason.code).toBe('CONFLICT');
        current = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<RecordStore['update']>>>).value;
      }
      const ids = (await options.exec(`SELECT id FROM ${tableNames(prefix).changes} ORDER BY id`)).map((r) => Number(r.id));
      expect(ids).toEqual(Array.from({ length: 26 }, (_, i) => i + 1));
      expect((await writers[1]!.get('lock/counter'))!.record.payload).toBe(5);
    });

    it('bad input is INVALID_ARGUMENT and writes nothing', async () => {
      const prefix = uniquePrefix();
      const store = await open('c1', { tablePrefix: prefix });
      const bad: Promise<unknown>[] = [
        store.create('', leaseRecord('a')),
        store.create('member/w/ü', leaseRecord('a')),
        store.create('member/w/has space', leaseRecord('a')),
        store.create(`lock/${'x'.repeat(400)}`, leaseRecord('a')),
        store.create('lock/x', { ...leaseRecord('a'), holderIdentity: 42 } as unknown as LeaseRecord),
        store.create('lock/x', { ...leaseRecord('a'), leaseDurationSeconds: -1 }),
        store.update('lock/x', { ...leaseRecord('a'), leaseTransitions: 1.5 }, '1'),
        store.get('lock/\n'),
      ];
      for (const attempt of bad) expect(await codeOf(attempt)).toBe('INVALID_ARGUMENT');
      expect(await codeOf(store.list('mémber/'))).toBe('INVALID_ARGUMENT');
      expect(Number((await options.exec(`SELECT revision FROM ${tableNames(prefix).state}`))[0]!.revision)).toBe(0);
      expect(await options.exec(`SELECT id FROM ${tableNames(prefix).changes}`)).toEqual([]);
    });

    it('a version this store never issued fails CONFLICT, and NOT_FOUND for a missing key', async () => {
      const store = await open('c1', { tablePrefix: uniquePrefix() });
      await store.create('lock/x', leaseRecord('a'));
      for (const version of ['', 'abc', '-1', '1e3', '99999999999999999999']) expect(await codeOf(store.update('lock/x', leaseRecord('b'), version))).toBe('CONFLICT');
      expect(await codeOf(store.delete('lock/y', 'abc'))).toBe('NOT_FOUND');
    });

    it('a watch from a revision that is not a number ends with REVISION_TOO_OLD', async () => {
      const store = await open('c1', { tablePrefix: uniquePrefix() });
      const w = collectWatch(store, '', 'not-a-revision');
      await waitFor(() => w.errors.length > 0, WAIT_MS, 'the watch to end');
      expect(w.errors.map((e) => e.code)).toEqual(['REVISION_TOO_OLD']);
    });
  });

  describe(`${name}: the change poller`, () => {
    it('serves every watch of the process, across clusters and prefixes, with one query per interval', async () => {
      const prefix = uniquePrefix();
      const pollIntervalMs = 100;
      const clusters = await Promise.all(['c1', 'c2', 'c3'].map((c) => open(c, { tablePrefix: prefix, pollIntervalMs })));
      const poller = (clusters[0] as SqlRecordStore).database.poller;
      for (const s of clusters) expect((s as SqlRecordStore).database.poller).toBe(poller);
      const watches = clusters.flatMap((s) => Array.from({ length: 10 }, (_, i) => collectWatch(s, i % 2 ? 'member/' : '', '0')));
      const startQueries = poller.queries;
      const started = Date.now();
      await clusters[1]!.create('member/w/a', leaseRecord('a'));
      await waitFor(() => watches.slice(10, 20).every((w) => w.all.some((e) => e.type === 'put')), WAIT_MS, 'every watch of c2 to see the write');
      // Idle for a few intervals: the count grows by one per interval, not by one per watch.
      await observeFor(5 * pollIntervalMs);
      const elapsed = Date.now() - started;
      const queries = poller.queries - startQueries;
      expect(queries).toBeGreaterThan(0);
      expect(queries).toBeLessThanOrEqual(Math.ceil(elapsed / pollIntervalMs) + 3);
      expect(watches.slice(0, 10).every((w) => w.all.every((e) => e.type === 'progress'))).toBe(true);
      for (const w of watches) expect(w.errors).toEqual([]);
    });

    it('a watch whose last changes were all in other clusters gets a progress bookmark, and resumes from it', async () => {
      const prefix = uniquePrefix();
      const mine = await open('c1', { tablePrefix: prefix });
      const other = await open('c2', { tablePrefix: prefix });
      const w = collectWatch(mine, '', '0');
      await other.create('lock/x', leaseRecord('a'));
      await waitFor(() => w.all.some((e) => e.type === 'progress'), WAIT_MS, 'a progress event');
      expect(w.all).toEqual([{ type: 'progress', revision: '1' }]);
    });
  });

  describe(`${name}: purge`, () => {
    it('a purge makes older revisions REVISION_TOO_OLD, keeps the newest change, and a watch from the current revision carries on', async () => {
      const prefix = uniquePrefix();
      const store = await open('c1', { tablePrefix: prefix });
      const db = (store as SqlRecordStore).database;
      let current = await store.create('member/w/a', leaseRecord('a'));
      const from = (await store.list('')).revision;
      for (let i = 1; i <= 3; i++) current = await store.update('member/w/a', leaseRecord('a', i), current.version);
      // Everything but the newest change (4): the poller tells "nothing new" from "purged" by it.
      expect(await db.purgeChanges({ all: true })).toBe(3);
      expect((await options.exec(`SELECT id FROM ${tableNames(prefix).changes}`)).map((r) => Number(r.id))).toEqual([4]);
      const old = collectWatch(store, '', '0');
      const behind = collectWatch(store, '', from);
      const last = collectWatch(store, '', '3');
      const now = collectWatch(store, '', (await store.list('')).revision);
      await waitFor(() => old.errors.length > 0 && behind.errors.length > 0, WAIT_MS, 'the old watches to end');
      expect(old.errors.map((e) => e.code)).toEqual(['REVISION_TOO_OLD']);
      expect(behind.errors.map((e) => e.code)).toEqual(['REVISION_TOO_OLD']);
      await store.create('member/w/b', leaseRecord('b'));
      await waitFor(() => now.all.length > 0 && last.all.length > 1, WAIT_MS, 'the current watches to see the write');
      expect(last.all).toMatchObject([{ type: 'put', revision: '4' }, { type: 'put', record: { key: 'member/w/b' }, revision: '5' }]);
      expect(now.all).toMatchObject([{ type: 'put', record: { key: 'member/w/b' }, revision: '5' }]);
      expect([...now.errors, ...last.errors]).toEqual([]);
      expect(await db.purgeChanges({ all: true })).toBe(4);
    });

    it('the scheduled purge deletes changes older than the retention and keeps the newer ones', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      const writer = await open('c1', { tablePrefix: prefix });
      for (let i = 0; i < 5; i++) await writer.create(`member/w/m${i}`, leaseRecord('a'));
      await options.exec(`UPDATE ${t.changes} SET created_ms = created_ms - 3600000 WHERE id <= 3`);
      await writer.close();
      // A process with a short purge interval and a one-hour retention: only the three aged changes go.
      await open('c1', { tablePrefix: prefix, purgeIntervalMs: 1000, changeRetentionMs: 1_800_000 });
      await waitFor(async () => Number((await options.exec(`SELECT purged_through FROM ${t.state}`))[0]!.purged_through) === 3, 15_000, 'the purge to run');
      expect((await options.exec(`SELECT id FROM ${t.changes} ORDER BY id`)).map((r) => Number(r.id))).toEqual([4, 5]);
    });
  });

  describe(`${name}: a read-only registry (registry.readOnly)`, () => {
    const title = 'as a user that may only SELECT: it opens, sees a member expire, and the revision counter never moves';
    if (!options.readOnlyUserConfig) {
      it.skip(`[skipped on ${name}: no read-only user] ${title}`, () => {});
    } else {
      it(title, async () => {
        const prefix = uniquePrefix();
        const t = tableNames(prefix);
        const store = await open('c1', { tablePrefix: prefix });
        // What a process that crashed at once left: a member record with a 1 s lease, never renewed.
        await store.create('member/worker/ghost', { ...leaseRecord('ghost', { n: 1 }), leaseDurationSeconds: 1 });
        await store.create('election/scheduler', leaseRecord('ghost'));
        const revision = async () => Number((await options.exec(`SELECT revision FROM ${t.state} WHERE id = 1`))[0]!.revision);
        const before = await revision();
        const viewer = await createRegistry({ ...(options.readOnlyUserConfig!('c1', { tablePrefix: prefix }) as object), identity: 'viewer', readOnly: true } as ConfigSource);
        registries.push(viewer);
        const events: string[] = [];
        viewer.watchMembers('worker', (e) => events.push(`${e.type} ${e.member.id}${e.type === 'removed' ? ` ${e.reason}` : ''}`));
        expect((await viewer.elections()).map((e) => e.holder?.identity)).toEqual(['ghost']);
        await waitFor(() => events.length === 2, WAIT_MS, 'the member to expire');
        expect(events).toEqual(['added ghost', 'removed ghost expired']);
        await viewer.close();
        expect(await revision()).toBe(before);
        expect((await store.list('member/')).records.map((r) => r.key)).toEqual(['member/worker/ghost']);
      });
    }
  });

  describe(`${name}: rows edited by hand into garbage`, () => {
    const garbage = ['not json at all', '{"holderIdentity": 5}', '[]', '{"holderIdentity":"a","leaseDurationSeconds":"soon","leaseTransitions":0}'];

    for (const value of garbage) {
      it(`a record whose value is ${JSON.stringify(value)} is reported corrupt by get and list, with a version that replaces it`, async () => {
        const prefix = uniquePrefix();
        const store = await open('c1', { tablePrefix: prefix });
        await store.create('member/w/bad', leaseRecord('bad'));
        await store.create('member/w/good', leaseRecord('good'));
        await options.exec(`UPDATE ${tableNames(prefix).records} SET record_value = ? WHERE record_key = ?`, [value, 'member/w/bad']);
        const err = await store.get('member/w/bad').then(
          () => undefined,
          (e: Error & { code: string; key: string }) => e,
        );
        expect(err?.code).toBe('CORRUPT_RECORD');
        expect(err?.key).toBe('member/w/bad');
        const list = await store.list('member/');
        expect(list.records.map((r) => r.key)).toEqual(['member/w/good']);
        expect(list.corrupt).toMatchObject([{ key: 'member/w/bad', version: '1', error: { code: 'CORRUPT_RECORD' } }]);
        await store.update('member/w/bad', leaseRecord('fixed'), list.corrupt[0]!.version);
        expect((await store.get('member/w/bad'))!.record.holderIdentity).toBe('fixed');
      });
    }

    it('a change row edited into garbage is a corrupt event, and the watch carries on with the next change', async () => {
      const prefix = uniquePrefix();
      const store = await open('c1', { tablePrefix: prefix });
      const from = (await store.list('')).revision;
      await store.create('member/w/a', leaseRecord('a'));
      await options.exec(`UPDATE ${tableNames(prefix).changes} SET record_value = ? WHERE id = 1`, ['{{{ garbage']);
      const w = collectWatch(store, '', from);
      await store.create('member/w/b', leaseRecord('b'));
      await waitFor(() => w.all.length >= 2, WAIT_MS, 'both changes');
      expect(w.all).toMatchObject([
        { type: 'corrupt', entry: { key: 'member/w/a', version: '1', error: { code: 'CORRUPT_RECORD' } }, revision: '1' },
        { type: 'put', record: { key: 'member/w/b' }, revision: '2' },
      ]);
      expect(w.errors).toEqual([]);
    });

    it('a registry reports a garbage member record as corruptRecord and keeps serving the others', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      const writer = await registry('c1', 'writer', { tablePrefix: prefix, pollIntervalMs: 50 });
      await writer.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
      const reader = await registry('c1', 'reader', { tablePrefix: prefix, pollIntervalMs: 50 });
      const corrupt: string[] = [];
      reader.on('corruptRecord', (e) => corrupt.push(e.key));
      await reader.members('worker'); // what it reads
      // A hand edit through the change table, as a watch reads it: a write whose value is garbage.
      const [state] = await options.exec(`SELECT revision FROM ${t.state}`);
      const next = Number(state!.revision) + 1;
      await options.exec(`UPDATE ${t.state} SET revision = ? WHERE id = 1`, [next]);
      await options.exec(`UPDATE ${t.records} SET record_value = ?, record_version = ? WHERE record_key = ?`, ['garbage', next, 'member/worker/w1']);
      await options.exec(`INSERT INTO ${t.changes} (id, cluster_name, record_key, record_version, record_value, created_ms) VALUES (?, ?, ?, ?, ?, ?)`, [
        next,
        'c1',
        'member/worker/w1',
        next,
        'garbage',
        Date.now(),
      ]);
      await waitFor(() => corrupt.length > 0, WAIT_MS, 'the corruptRecord event');
      expect(corrupt).toEqual(['member/worker/w1']);
      const added: string[] = [];
      reader.watchMembers('worker', (e) => e.type === 'added' && added.push(e.member.id));
      await writer.announce({ role: 'worker', id: 'w2' });
      await waitFor(() => added.includes('w2'), WAIT_MS, 'the next member');
      expect(reader.state).toBe('connected');
    });
  });
}

async function codeAndMessage(promise: Promise<RecordStore>, stores: RecordStore[]): Promise<{ code: string; message: string }> {
  return promise.then(
    (s) => {
      stores.push(s);
      return { code: 'connected', message: '' };
    },
    (e: Error & { code?: string }) => ({ code: e.code ?? 'no code', message: e.message }),
  );
}
