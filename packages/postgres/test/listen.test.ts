import { afterEach, describe, expect, it } from 'vitest';
import { collectWatch, leaseRecord, observeFor, waitFor } from '@rollcall/conformance';
import type { SqlRecordStore } from '@rollcall/sql';
import { createPostgresStore, type PostgresOptions } from '../src/index.js';
import type { NotifyListener } from '../src/watch.js';
import { testOptions, testSchema } from './support/postgres.js';

const schema = testSchema('listen');
const stores: SqlRecordStore[] = [];
afterEach(async () => {
  await Promise.allSettled(stores.splice(0).map((s) => s.close()));
});

let prefixes = 0;
const prefix = () => `l${process.pid}_${prefixes++}_`;
const POLL_MS = 50;

/** A store with a database of its own: stores with different settings share no pool, listener or poller. */
async function open(tablePrefix: string, overrides: Partial<PostgresOptions> = {}, requestTimeoutMs = 5000): Promise<SqlRecordStore> {
  const store = await createPostgresStore({ cluster: 'c1', ...testOptions(schema.name, { tablePrefix, pollIntervalMs: POLL_MS, ...overrides }), requestTimeoutMs });
  stores.push(store);
  return store;
}

const listenerOf = (store: SqlRecordStore) => store.database.dialect.changeSignal as NotifyListener;

describe('postgres: the change feed is LISTEN/NOTIFY', () => {
  it('a watching process reads the change table when another process writes, not on a timer', async () => {
    const p = prefix();
    const watcher = await open(p);
    const writer = await open(p, {}, 5001);
    expect(writer.database).not.toBe(watcher.database);
    const w = collectWatch(watcher, '', '0');
    const poller = watcher.database.poller;
    await waitFor(() => listenerOf(watcher).listening, 10_000, 'the watcher to listen');
    // The read that follows LISTEN (it catches what came before) runs; then nothing is scheduled.
    await waitFor(() => !poller.pending, 10_000, 'the catch-up read to end');
    const before = poller.queries;
    // Twenty poll intervals with nothing written: a polling watch would read twenty times.
    await observeFor(20 * POLL_MS);
    expect(poller.queries).toBe(before);
    expect(poller.pending).toBe(false);
    await writer.create('lock/x', leaseRecord('a'));
    await waitFor(() => w.all.some((e) => e.type === 'put'), 10_000, 'the watch to see the write');
    expect(poller.queries).toBeGreaterThan(before);
    expect(w.errors).toEqual([]);
  });

  it('a process that watches nothing opens no listening connection', async () => {
    const store = await open(prefix());
    await store.create('member/w/a', leaseRecord('a'));
    expect(listenerOf(store).listening).toBe(false);
    expect(listenerOf(store).statements).toBe(0);
  });

  it('a listening connection the server ends: writes still reach the watch, and the process listens again', async () => {
    const p = prefix();
    const watcher = await open(p, { keepAliveIntervalMs: 60_000 });
    const writer = await open(p, {}, 5001);
    const w = collectWatch(watcher, '', '0');
    const listener = listenerOf(watcher);
    await waitFor(() => listener.listening, 10_000, 'the watcher to listen');
    const listen = `LISTEN "${p}changes"`;
    const killed = await schema.exec(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query = ?`, [listen]);
    expect(killed).toEqual([{ ok: true }]);
    await writer.create('lock/a', leaseRecord('a'));
    await waitFor(() => w.all.some((e) => e.type === 'put' && e.record.key === 'lock/a'), 10_000, 'the write made while the connection was down');
    await waitFor(async () => listener.listening && (await schema.exec(`SELECT pid FROM pg_stat_activity WHERE query = ?`, [listen])).length === 1, 10_000, 'a new listening connection');
    await writer.create('lock/b', leaseRecord('b'));
    await waitFor(() => w.all.some((e) => e.type === 'put' && e.record.key === 'lock/b'), 10_000, 'the write after listening again');
    expect(w.errors).toEqual([]);
  });
});

describe('postgres: changeFeed poll, for a transaction-pooling proxy', () => {
  it('a watch sees the writes of another process by reading on the interval, and no connection LISTENs', async () => {
    const p = prefix();
    const watcher = await open(p, { changeFeed: 'poll' });
    const writer = await open(p, {}, 5001);
    expect(watcher.database.dialect.changeSignal).toBeUndefined();
    const w = collectWatch(watcher, '', '0');
    const poller = watcher.database.poller;
    // Polling: reads come with nothing written.
    const before = poller.queries;
    await waitFor(() => poller.queries >= before + 3, 10_000, 'three timed reads');
    await writer.create('lock/x', leaseRecord('a'));
    await waitFor(() => w.all.some((e) => e.type === 'put' && e.record.key === 'lock/x'), 10_000, 'the watch to see the write');
    // The only LISTEN on this prefix's channel would be the writer's, which watches nothing.
    expect(await schema.exec(`SELECT pid FROM pg_stat_activity WHERE query LIKE ?`, [`LISTEN "${p}%`])).toEqual([]);
    expect(w.errors).toEqual([]);
  });
});
