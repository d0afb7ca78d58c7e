import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type Leadership, type Member, type Registry } from '@rollcall/core';
import { restartServer, startServer, stopServer } from '@rollcall/tools/testenv';
import { waitFor } from '@rollcall/conformance';
import { testOptions, testSchema } from './support/postgres.js';

const schema = testSchema('faults');
const registries: Registry[] = [];
afterEach(async () => {
  // A failed case may leave the server stopped; every later case needs it.
  await startServer('postgres');
  await Promise.allSettled(registries.splice(0).map((r) => r.close()));
});

let clusters = 0;
const election = { leaseDurationMs: 6000, renewDeadlineMs: 4000, retryPeriodMs: 500 };
const member = { heartbeatIntervalMs: 500, leaseDurationMs: 6000 };

/** A registry with a pool of its own (pools are shared by identical settings, so each gets a distinct poolSize). */
async function registry(cluster: string, identity: string, poolSize: number): Promise<Registry> {
  const { tls: _tls, ...postgres } = testOptions(schema.name, { poolSize, pollIntervalMs: 100 });
  const r = await createRegistry({ type: 'postgres', cluster, identity, election, member, requestTimeoutMs: 1000, postgres });
  registries.push(r);
  return r;
}

/** Bound on the cluster settling after a restart, milliseconds. */
const SETTLE_MS = 30_000;

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

describe('postgres: PostgreSQL restarted under a running election', () => {
  it('mid-term: the leader keeps its term or steps down before anyone else takes over, and one leader remains', async () => {
    const cluster = `f${clusters++}`;
    const [ra, rb, rc] = await Promise.all([registry(cluster, 'a', 2), registry(cluster, 'b', 3), registry(cluster, 'c', 4)]);
    const a = ra.campaign('sched');
    await a.whenElected();
    const b = rb.campaign('sched');
    const c = rc.campaign('sched');
    const timeline = leadershipLog({ a, b, c });
    timeline.leaders.add('a');
    await restartServer('postgres');
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
    await stopServer('postgres');
    await waitFor(() => steppedDown, 20_000, 'the leader to step down');
    expect(b.isLeader).toBe(false);
    await startServer('postgres');
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
    await Promise.all([a.resign(), restartServer('postgres')]);
    await waitFor(() => [b, c].filter((l) => l.isLeader).length === 1, SETTLE_MS, 'one new leader');
    expect(a.isLeader).toBe(false);
    expect(timeline.violations).toEqual([]);
    expect([b, c].find((l) => l.isLeader)!.fencingToken).toBeGreaterThan(first);
  });
});

describe('postgres: PostgreSQL restarted under heartbeats', () => {
  it('member views converge after the restart, and payload updates flow again', async () => {
    const cluster = `f${clusters++}`;
    const [workers, watcher] = await Promise.all([registry(cluster, 'workers', 2), registry(cluster, 'watcher', 3)]);
    const w1 = await workers.announce({ role: 'worker', id: 'w1', payload: { load: 1 } });
    await workers.announce({ role: 'worker', id: 'w2', payload: { load: 2 } });
    // The view the events build must always equal members(): no lost and no phantom events.
    const view = new Map<string, Member>();
    watcher.watchMembers('worker', (e) => (e.type === 'removed' ? view.delete(e.member.id) : view.set(e.member.id, e.member)));
    await waitFor(() => view.size === 2, SETTLE_MS, 'both members');
    await restartServer('postgres');
    await w1.update({ load: 10 });
    await waitFor(() => view.get('w1')?.payload !== undefined && (view.get('w1')!.payload as { load: number }).load === 10, SETTLE_MS, 'the update after the restart');
    expect([...view.keys()].sort()).toEqual(['w1', 'w2']);
    expect((await watcher.members('worker')).map((m) => m.id).sort()).toEqual(['w1', 'w2']);
    expect(watcher.state).toBe('connected');
    expect(workers.state).toBe('connected');
  });
});
