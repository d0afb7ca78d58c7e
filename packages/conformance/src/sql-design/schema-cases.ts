import { SCHEMA_VERSION, tableNames, type SqlRecordStore } from '@rollcall/sql';
import { describe, expect, it } from 'vitest';
import { leaseRecord } from '../records.js';
import { codeAndMessage, codeOf, uniquePrefix, type SqlDesignHarness } from './harness.js';

/** The SQL design: the schema: created on first use, shared, detected, refused when foreign or of another version. */
export function schemaCases(h: SqlDesignHarness): void {
  const { name, options, open, stores } = h;
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

    it('tables of an earlier release (no created_revision) get the column on open; their rows read as created at their acquireTime, and no write of this release pins them', async () => {
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
      const created = `legacy:${legacy!.record.acquireTime}`;
      expect(legacy).toMatchObject({ version: a1.version, created });
      expect((await s2.list('lock/')).records[0]?.created).toBe(created);
      // An update of this release keeps it, and leaves the column NULL: a number now would be one more creation.
      const kept = await s1.update('lock/a', { ...legacy!.record, payload: { n: 2 } }, a1.version);
      expect(kept.created).toBe(created);
      expect((await s2.get('lock/a'))?.created).toBe(created);
      expect((await options.exec(`SELECT created_revision FROM ${t.records} WHERE record_key = ?`, ['lock/a']))[0]!.created_revision ?? null).toBeNull();
      // A record without an acquireTime (a free lease) reads as created at its version, as before.
      const free = await s1.update('lock/a', { ...leaseRecord(''), acquireTime: null }, kept.version);
      expect(free.created).toBe(free.version);
      expect((await s2.get('lock/a'))?.created).toBe(free.version);
      const b = await s2.create('lock/b', leaseRecord('b'));
      expect(b.created).toBe(b.version);

      // A row a process of the previous release inserts during the rolling update (created_revision NULL).
      await options.exec(`UPDATE ${t.records} SET created_revision = NULL WHERE record_key = ?`, ['lock/b']);
      expect((await s1.get('lock/b'))?.created).toBe(`legacy:${b.record.acquireTime}`);
      const b1 = await s1.update('lock/b', leaseRecord('b', { n: 1 }), b.version);
      expect(b1.created).toBe(`legacy:${b1.record.acquireTime}`);
      expect((await options.exec(`SELECT created_revision FROM ${t.records} WHERE record_key = ?`, ['lock/b']))[0]!.created_revision ?? null).toBeNull();
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
}
