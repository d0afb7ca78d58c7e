import { type ConfigSource, createRegistry, type Leadership, type Member, type Registry } from '@rollcall/core';
import type { SqlOptions, SqlRecordStore } from '@rollcall/sql';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { leaseRecord } from './records.js';
import { rejection, waitFor } from './wait-for.js';

/** What `sqlServerConformance` needs from a SQL backend whose database is a server (MySQL/MariaDB, PostgreSQL). */
export interface SqlServerConformanceOptions {
  /** The backend: `mysql`, `postgres`. */
  name: string;
  /** The server, for titles: `MariaDB`, `PostgreSQL`. */
  server: string;
  /** Opens a store on the test database with these SQL options over the defaults; `poolSize` differs per caller, so each gets a pool of its own. */
  openStore(cluster: string, options: Partial<SqlOptions> & { poolSize: number }, requestTimeoutMs: number): Promise<SqlRecordStore>;
  /** The object-form configuration of a registry on the test database (type and the backend's section; the suite adds cluster, identity and timings). */
  registryConfig(options: Partial<SqlOptions> & { poolSize: number }): ConfigSource;
  /** Stops the server, starts it, restarts it; each resolves once done (start: once it serves). Data survives. */
  stopServer(): Promise<void>;
  startServer(): Promise<void>;
  restartServer(): Promise<void>;
}

/** Bound on the cluster settling after a restart, milliseconds. */
const SETTLE_MS = 30_000;
const ELECTION = { leaseDurationMs: 6000, renewDeadlineMs: 4000, retryPeriodMs: 500 };
const MEMBER = { heartbeatIntervalMs: 500, leaseDurationMs: 6000 };
const REQUEST_TIMEOUT_MS = 1000;

/**
 * Every elected/lost of the candidates, in the order they happened, checked as
 * they come: a candidate may only be elected while no other believes it leads.
 */
function leadershipLog(candidates: Record<string, Leadership>) {
  const leaders = new Set<string>();
  const log: string[] = [];
  const violations: string[] = [];
  const tokens: number[] = [];
  for (const [name, l] of Object.entries(candidates)) {
    l.on('elected', ({ fencingToken }) => {
      if (leaders.size > 0) violations.push(`${name} elected while ${[...leaders].join(',')} still led`);
      leaders.add(name);
      tokens.push(fencingToken);
      log.push(`${name}:elected:${fencingToken}`);
    });
    l.on('lost', ({ reason }) => {
      leaders.delete(name);
      log.push(`${name}:lost:${reason}`);
    });
  }
  return { leaders, log, violations, tokens };
}

/**
 * What a SQL server does to the shared store beyond its design
 * (`sqlDesignConformance`): restarted or stopped under a running election and
 * under heartbeats, and a client gone silent in the middle of a write
 * transaction. Every case needs a server of its own to stop: run the file on a
 * private test instance. Call it at the top level of a vitest file.
 */
export function sqlServerConformance(options: SqlServerConformanceOptions): void {
  const { name, server } = options;
  const registries: Registry[] = [];
  const stores: SqlRecordStore[] = [];
  let clusters = 0;
  afterEach(async () => {
    // A failed case may leave the server stopped; every later case needs it.
    await options.startServer();
    await Promise.allSettled(registries.splice(0).map((r) => r.close()));
  });
  afterAll(async () => void (await Promise.allSettled(stores.map((s) => s.close()))));

  /** A registry with a pool of its own (pools are shared by identical settings, so each gets a distinct poolSize). */
  async function registry(cluster: string, identity: string, poolSize: number): Promise<Registry> {
    const r = await createRegistry({ ...(options.registryConfig({ poolSize, pollIntervalMs: 100 }) as object), cluster, identity, election: ELECTION, member: MEMBER, requestTimeoutMs: REQUEST_TIMEOUT_MS } as ConfigSource);
    registries.push(r);
    return r;
  }

  describe(`${name}: ${server} restarted under a running election`, () => {
    it('mid-term: the leader keeps its term or steps down before anyone else takes over, and one leader remains', async () => {
      const cluster = `f${clusters++}`;
      const [ra, rb, rc] = await Promise.all([registry(cluster, 'a', 2), registry(cluster, 'b', 3), registry(cluster, 'c', 4)]);
      const a = ra.campaign('sched');
      await a.whenElected();
      const b = rb.campaign('sched');
      const c = rc.campaign('sched');
      const timeline = leadershipLog({ a, b, c });
      timeline.leaders.add('a');
      await options.restartServer();
      // Converged: one leader that every candidate agrees on, and the store answers again.
      await waitFor(() => [a, b, c].filter((l) => l.isLeader).length === 1, SETTLE_MS, 'one leader after the restart');
      const observer = ra.observe('sched');
      await waitFor(() => observer.leader?.identity === [a, b, c].find((l) => l.isLeader)?.identity, SETTLE_MS, 'the observer to name the leader');
      expect(timeline.violations).toEqual([]);
      if (timeline.log.length === 0) expect(a.isLeader).toBe(true); // kept its term through the restart
      else expect(Math.min(...timeline.tokens)).toBeGreaterThan(a.fencingToken ?? 0);
    });

    it('down past the renew deadline: the leader steps down before any other is elected; after the start one leader with a larger token', async () => {
      const cluster = `f${clusters++}`;
      const [ra, rb] = await Promise.all([registry(cluster, 'a', 2), registry(cluster, 'b', 3)]);
      const a = ra.campaign('sched');
      const { fencingToken: first } = await a.whenElected().then(() => ({ fencingToken: a.fencingToken! }));
      const b = rb.campaign('sched');
      const timeline = leadershipLog({ a, b });
      timeline.leaders.add('a');
      let steppedDown = false;
      a.on('lost', () => (steppedDown = true));
      await options.stopServer();
      await waitFor(() => steppedDown, 20_000, 'the leader to step down');
      expect(b.isLeader).toBe(false);
      await options.startServer();
      await waitFor(() => [a, b].filter((l) => l.isLeader).length === 1, SETTLE_MS, 'one leader after the start');
      expect(timeline.violations).toEqual([]);
      expect(timeline.log[0]).toMatch(/^a:lost:/);
      expect(Math.max(...timeline.tokens)).toBeGreaterThan(first);
    });

    it('mid-election: a restart while the leader hands over still ends with exactly one new leader', async () => {
      const cluster = `f${clusters++}`;
      const [ra, rb, rc] = await Promise.all([registry(cluster, 'a', 2), registry(cluster, 'b', 3), registry(cluster, 'c', 4)]);
      const a = ra.campaign('sched');
      await a.whenElected();
      const first = a.fencingToken!;
      const b = rb.campaign('sched');
      const c = rc.campaign('sched');
      const timeline = leadershipLog({ a, b, c });
      timeline.leaders.add('a');
      // The resign and the restart race: the takeover happens before, during or after it.
      await Promise.all([a.resign(), options.restartServer()]);
      await waitFor(() => [b, c].filter((l) => l.isLeader).length === 1, SETTLE_MS, 'one new leader');
      expect(a.isLeader).toBe(false);
      expect(timeline.violations).toEqual([]);
      expect([b, c].find((l) => l.isLeader)!.fencingToken).toBeGreaterThan(first);
    });
  });

  describe(`${name}: ${server} restarted under heartbeats`, () => {
    it('member views converge after the restart, and payload updates flow again', async () => {
      const cluster = `f${clusters++}`;
      const [workers, watcher] = await Promise.all([registry(cluster, 'workers', 2), registry(cluster, 'watcher', 3)]);
      const w1 = await workers.announce({ role: 'worker', id: 'w1', payload: { load: 1 } });
      await workers.announce({ role: 'worker', id: 'w2', payload: { load: 2 } });
      // The view the events build must always equal members(): no lost and no phantom events.
      const view = new Map<string, Member>();
      watcher.watchMembers('worker', (e) => (e.type === 'removed' ? view.delete(e.member.id) : view.set(e.member.id, e.member)));
      await waitFor(() => view.size === 2, SETTLE_MS, 'both members');
      await options.restartServer();
      await w1.update({ load: 10 });
      await waitFor(() => view.get('w1')?.payload !== undefined && (view.get('w1')!.payload as { load: number }).load === 10, SETTLE_MS, 'the update after the restart');
      expect([...view.keys()].sort()).toEqual(['w1', 'w2']);
      expect((await watcher.members('worker')).map((m) => m.id).sort()).toEqual(['w1', 'w2']);
      expect(watcher.state).toBe('connected');
      expect(workers.state).toBe('connected');
    });
  });

  // Found on MariaDB by the e2e chaos soak: a candidate SIGSTOPped in the middle of a write held
  // the state row's lock (every write takes it first), and every other process's writes timed out
  // until it resumed — leaders stepped down, nobody could take over, members expired. A client
  // that vanishes mid-transaction (paused, partitioned: the server cannot tell) must not block
  // the other writers for longer than about the request timeout.
  describe(`${name}: a writer that goes silent in the middle of a write transaction`, () => {
    it('blocks the other writers no longer than about the request timeout, and its own write is rolled back', async () => {
      const open = async (poolSize: number) => {
        const s = await options.openStore('idle-tx', { poolSize }, REQUEST_TIMEOUT_MS);
        stores.push(s);
        return s;
      };
      const [silent, other] = [await open(12), await open(13)];
      let resume!: () => void;
      const resumed = new Promise<void>((resolve) => (resume = resolve));
      let locked!: () => void;
      const stateRowLocked = new Promise<void>((resolve) => (locked = resolve));
      // Takes the state row's lock as every write does first, then says nothing: what the server
      // sees of a client that was paused or cut off right there.
      const { dialect, tables } = silent.database;
      const stuck = dialect.transaction(async (tx) => {
        await dialect.nextRevision(tx, tables);
        locked();
        await resumed;
      });
      await stateRowLocked;
      try {
        const started = performance.now();
        await waitFor(() => other.create('election/after-the-silent-one', leaseRecord('other')).then(() => true, () => false), 10_000, "the other client's write");
        expect(performance.now() - started).toBeLessThan(4 * REQUEST_TIMEOUT_MS);
      } finally {
        resume();
      }
      // The server ended the silent transaction: it committed nothing.
      await rejection(stuck);
    });
  });
}
