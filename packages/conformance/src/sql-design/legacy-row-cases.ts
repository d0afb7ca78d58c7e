import type { MemberEvent } from '@rollcall/core';
import { formatMicroTime, type LeaseRecord, recordToJson } from '@rollcall/core/spi';
import { tableNames, type TableNames } from '@rollcall/sql';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../wait-for.js';
import { uniquePrefix, WAIT_MS, type SqlDesignConformanceOptions, type SqlDesignHarness } from './harness.js';

/**
 * The writes of the release before incarnations (8e45efd) as raw SQL: its
 * INSERT and UPDATE name no `created_revision`, nor does its change row. One
 * statement at a time, not one transaction: the case's only writer.
 */
function previousReleaseWriter(options: SqlDesignConformanceOptions, t: TableNames, cluster: string) {
  const next = async (): Promise<number> => {
    await options.exec(`UPDATE ${t.state} SET revision = revision + 1 WHERE id = 1`);
    return Number((await options.exec(`SELECT revision FROM ${t.state} WHERE id = 1`))[0]!.revision);
  };
  const change = (revision: number, key: string, value: string | null) =>
    options.exec(`INSERT INTO ${t.changes} (id, cluster_name, record_key, record_version, record_value, created_ms) VALUES (?, ?, ?, ?, ?, ?)`, [revision, cluster, key, revision, value, Date.now()]);
  return {
    async insert(key: string, record: LeaseRecord): Promise<string> {
      const revision = await next();
      const value = recordToJson(record);
      await options.exec(`INSERT INTO ${t.records} (cluster_name, record_key, record_version, record_value) VALUES (?, ?, ?, ?)`, [cluster, key, revision, value]);
      await change(revision, key, value);
      return String(revision);
    },
    async update(key: string, record: LeaseRecord, version: string): Promise<string> {
      const revision = await next();
      const value = recordToJson(record);
      await options.exec(`UPDATE ${t.records} SET record_version = ?, record_value = ? WHERE cluster_name = ? AND record_key = ? AND record_version = ?`, [revision, value, cluster, key, Number(version)]);
      await change(revision, key, value);
      return String(revision);
    },
    async delete(key: string): Promise<void> {
      const revision = await next();
      await options.exec(`DELETE FROM ${t.records} WHERE cluster_name = ? AND record_key = ?`, [cluster, key]);
      await change(revision, key, null);
    },
  };
}

/** A member record as a process of the previous release writes it: its acquireTime fixed for the process's life. */
function previousReleaseMember(id: string, acquireTime: string, payload: { n: number }, holderIdentity = id): LeaseRecord {
  return { holderIdentity, leaseDurationSeconds: 20, acquireTime, renewTime: formatMicroTime(new Date()), leaseTransitions: 0, payload, liveness: { mode: 'heartbeat' } };
}

const line = (e: MemberEvent) => `${e.type} ${e.member.id}@${e.member.incarnation}${e.type === 'removed' ? ` ${e.reason}` : ''}`;

/** The SQL design: rows a process of the release before incarnations writes during a rolling update (issue 34 item 7). */
export function legacyRowCases(h: SqlDesignHarness): void {
  const { name, options, open, registry } = h;
  describe(`${name}: rows of the release before incarnations`, () => {
    it('a member row the previous release writes and heartbeats (no created_revision) is one incarnation to this release until its process restarts', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      const key = 'member/worker/old-1';
      const store = await open('c1', { tablePrefix: prefix, pollIntervalMs: 50 });
      const reader = await registry('c1', 'reader', { tablePrefix: prefix, pollIntervalMs: 50 });
      const events: MemberEvent[] = [];
      reader.watchMembers('worker', (e) => events.push(e));
      const watched: string[] = [];
      store.watch('member/worker/', (await store.list('member/worker/')).revision, {
        event: (e) => void (e.type === 'put' && watched.push(e.record.created)),
        error: () => undefined,
      });
      const old = previousReleaseWriter(options, t, 'c1');

      const started = formatMicroTime(new Date(Date.now() - 60_000));
      const first = `legacy:${started}`;
      let version = await old.insert(key, previousReleaseMember('old-1', started, { n: 0 }));
      await waitFor(() => events.find((e) => e.type === 'added'), WAIT_MS, 'the old member added');
      // Heartbeats, the payload changing once: each one a new version, never a new creation.
      for (let beat = 1; beat <= 8; beat++) version = await old.update(key, previousReleaseMember('old-1', started, { n: beat < 4 ? 0 : 1 }), version);
      await waitFor(() => watched.length >= 9 || undefined, WAIT_MS, 'the watch to see every heartbeat');
      await waitFor(() => events.find((e) => e.type === 'updated'), WAIT_MS, 'the payload update');
      expect(await store.get(key)).toMatchObject({ version, created: first });
      expect((await store.list('member/')).records.map((r) => r.created)).toEqual([first]);
      expect(new Set(watched)).toEqual(new Set([first]));
      expect((await reader.members('worker')).map((m) => m.incarnation)).toEqual([first]);

      // A restart of the old process is a new acquireTime: a new incarnation, and the earlier one removed.
      const restarted = formatMicroTime(new Date());
      const second = `legacy:${restarted}`;
      await old.delete(key);
      await old.insert(key, previousReleaseMember('old-1', restarted, { n: 0 }));
      await waitFor(() => events.find((e) => e.type === 'added' && e.member.incarnation === second), WAIT_MS, 'the restarted old member added');
      // `deleted` where the reader saw the delete, `replaced` where a poll folded it into the insert.
      const reason = (events[2] as { reason?: string } | undefined)?.reason;
      expect(['deleted', 'replaced']).toContain(reason);
      expect(events.map(line)).toEqual([`added old-1@${first}`, `updated old-1@${first}`, `removed old-1@${first} ${reason}`, `added old-1@${second}`]);
    });

    it('a mark of this release on such a row keeps its creation and leaves created_revision NULL; the old process writing it back is the same incarnation', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      const key = 'member/worker/old-2';
      const store = await open('c1', { tablePrefix: prefix });
      const old = previousReleaseWriter(options, t, 'c1');
      const started = formatMicroTime(new Date());
      const created = `legacy:${started}`;
      const version = await old.insert(key, previousReleaseMember('old-2', started, { n: 0 }));
      const marked = await store.update(key, previousReleaseMember('old-2', started, { n: 0 }, ''), version);
      expect(marked.created).toBe(created);
      const column = async () => (await options.exec(`SELECT created_revision FROM ${t.records} WHERE record_key = ?`, [key]))[0]!.created_revision ?? null;
      expect(await column()).toBeNull();
      const back = await old.update(key, previousReleaseMember('old-2', started, { n: 0 }), marked.version);
      expect(await store.get(key)).toMatchObject({ version: back, created });
      expect(await column()).toBeNull();
    });

    it('a write of the previous release over a row this release created keeps that row\'s creation, in get, list and the watch (its change row has none)', async () => {
      const prefix = uniquePrefix();
      const t = tableNames(prefix);
      const key = 'member/worker/new-1';
      const store = await open('c1', { tablePrefix: prefix, pollIntervalMs: 50 });
      const watched: string[] = [];
      store.watch('member/', (await store.list('member/')).revision, {
        event: (e) => void (e.type === 'put' && watched.push(`${e.record.version}@${e.record.created}`)),
        error: () => undefined,
      });
      const mine = await store.create(key, previousReleaseMember('new-1', formatMicroTime(new Date()), { n: 0 }));
      // Its predecessor of the previous release, still heartbeating, takes the record back by compare-and-set.
      const old = previousReleaseWriter(options, t, 'c1');
      const takenBack = await old.update(key, previousReleaseMember('new-1', formatMicroTime(new Date(Date.now() - 60_000)), { n: 1 }), mine.version);
      await waitFor(() => watched.length >= 2 || undefined, WAIT_MS, 'the watch to see the write back');
      expect(watched).toEqual([`${mine.version}@${mine.created}`, `${takenBack}@${mine.created}`]);
      expect(await store.get(key)).toMatchObject({ version: takenBack, created: mine.created });
      expect((await store.list('member/')).records.map((r) => r.created)).toEqual([mine.created]);
    });
  });
}
