import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type Leadership, type MemberEvent, type Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { killZookeeperEnsembleLeader, startServer, stopServer, TcpProxyGroup, waitForZookeeperEnsembleLeader } from '@rollcall/tools/testenv';
import { observeFor, uniqueCluster, waitFor } from '@rollcall/conformance';
import type { ZookeeperStore } from '../src/index.js';
import { ensemble } from './helpers.js';

/**
 * The 3-node ensemble under faults. Timings leave room for a ZooKeeper leader
 * election (a few seconds with tickTime=1000) inside the renew deadline, so a
 * failover of the ensemble need not cost the Rollcall leader its term.
 */
const SURVIVE = {
  election: { leaseDurationMs: 15_000, renewDeadlineMs: 12_000, retryPeriodMs: 1000 },
  lock: { leaseDurationMs: 15_000, renewDeadlineMs: 12_000, retryPeriodMs: 1000 },
  member: { heartbeatIntervalMs: 1000, leaseDurationMs: 15_000 },
  requestTimeoutMs: 2000,
};

const registries: Registry[] = [];
const cleanups: (() => Promise<void>)[] = [];
let killedUnit: string | undefined;

afterEach(async () => {
  await Promise.allSettled(registries.splice(0).map((r) => r.close()));
  for (const cleanup of cleanups.splice(0)) await cleanup();
  if (killedUnit) await startServer(killedUnit);
  killedUnit = undefined;
});

afterAll(async () => {
  // Leave the ensemble whole for whoever runs next.
  await startServer('zookeeper-ensemble');
});

async function open(cluster: string, identity: string, connectString = ensemble(), overrides: Record<string, unknown> = {}, sessionTimeoutMs = 10_000): Promise<Registry> {
  const registry = await createRegistry({ type: 'zookeeper', cluster, identity, ...SURVIVE, ...overrides, zookeeper: { connectString, sessionTimeoutMs, connectTimeoutMs: 20_000, openAcl: true } } as never);
  registries.push(registry);
  return registry;
}

/** Every elected/lost of every candidate, with the time, to check that terms never overlap. */
function timeline(candidates: { name: string; leadership: Leadership }[]) {
  const events: { name: string; type: 'elected' | 'lost'; at: number; token: number }[] = [];
  const add = (name: string, leadership: Leadership) => {
    leadership.on('elected', (e) => events.push({ name, type: 'elected', at: performance.now(), token: e.fencingToken }));
    leadership.on('lost', (e) => events.push({ name, type: 'lost', at: performance.now(), token: e.fencingToken }));
  };
  for (const { name, leadership } of candidates) add(name, leadership);
  return {
    events,
    add(name: string, leadership: Leadership) {
      candidates.push({ name, leadership });
      add(name, leadership);
    },
    /** At most one candidate believes it leads at every instant; fencing tokens of successive terms increase. */
    assertOneLeaderAtATime() {
      let leader: string | undefined;
      let lastToken = -1;
      for (const e of events) {
        if (e.type === 'elected') {
          expect(leader, `${e.name} elected while ${leader} still led`).toBeUndefined();
          expect(e.token).toBeGreaterThan(lastToken);
          leader = e.name;
          lastToken = e.token;
        } else if (e.name === leader) leader = undefined;
      }
    },
    leaders: () => candidates.filter((c) => c.leadership.isLeader).map((c) => c.name),
  };
}

function memberLog(registry: Registry, role: string) {
  const events: MemberEvent[] = [];
  registry.watchMembers(role, (e) => events.push(e));
  return { events, removed: () => events.filter((e) => e.type === 'removed') };
}

describe('zookeeper ensemble', () => {
  it('the ensemble leader killed mid-election: one Rollcall leader at a time, members stay listed', async () => {
    await waitForZookeeperEnsembleLeader();
    const cluster = uniqueCluster('ens-elect');
    const names = ['a', 'b', 'c'];
    const regs = await Promise.all(names.map((n) => open(cluster, n)));
    await Promise.all(regs.map((r, i) => r.announce({ role: 'master', id: names[i]!, payload: { n: i } })));
    const logs = regs.map((r) => memberLog(r, 'master'));
    await waitFor(async () => (await Promise.all(regs.map((r) => r.members('master')))).every((m) => m.length === 3), 10_000, 'every registry to list 3 members');
    const candidates = regs.map((r, i) => ({ name: names[i]!, leadership: r.campaign('scheduler') }));
    const line = timeline(candidates);
    // Kill while the candidates are still racing for the record.
    const killed = await killZookeeperEnsembleLeader();
    killedUnit = killed.unit;
    const next = await waitForZookeeperEnsembleLeader({ excludingId: killed.id });
    expect(next.id).not.toBe(killed.id);
    await waitFor(() => line.leaders().length === 1, 30_000, 'one Rollcall leader');
    // Hold on a little: a second leader would show up within a retry period or two.
    await observeFor(3 * SURVIVE.election.retryPeriodMs);
    expect(line.leaders()).toHaveLength(1);
    line.assertOneLeaderAtATime();
    for (const r of regs) expect((await r.members('master')).map((m) => m.id)).toEqual(names);
    for (const log of logs) expect(log.removed()).toEqual([]);
  });

  it('the ensemble leader killed mid-heartbeat: the Rollcall leader keeps its term, members stay listed and keep updating', async () => {
    await waitForZookeeperEnsembleLeader();
    const cluster = uniqueCluster('ens-beat');
    const names = ['a', 'b', 'c'];
    const regs = await Promise.all(names.map((n) => open(cluster, n)));
    const handles = await Promise.all(regs.map((r, i) => r.announce({ role: 'worker', id: names[i]!, payload: { beat: 0 } })));
    const candidates = regs.map((r, i) => ({ name: names[i]!, leadership: r.campaign('scheduler') }));
    const line = timeline(candidates);
    await waitFor(() => line.leaders().length === 1, 10_000, 'a Rollcall leader');
    const leaderBefore = line.leaders()[0]!;
    const logs = regs.map((r) => memberLog(r, 'worker'));
    await waitFor(async () => (await Promise.all(regs.map((r) => r.members('worker')))).every((m) => m.length === 3), 10_000, 'every registry to list 3 workers');
    const killed = await killZookeeperEnsembleLeader();
    killedUnit = killed.unit;
    await waitForZookeeperEnsembleLeader({ excludingId: killed.id });
    // Heartbeats carry on through the new ensemble leader: a payload change reaches every peer.
    await Promise.all(handles.map((h) => h.update({ beat: 1 })));
    await waitFor(
      async () => (await Promise.all(regs.map((r) => r.members('worker')))).every((m) => m.length === 3 && m.every((x) => (x.payload as { beat: number }).beat === 1)),
      20_000,
      'every registry to see every worker at beat 1',
    );
    expect(line.leaders()).toEqual([leaderBefore]);
    line.assertOneLeaderAtATime();
    expect(line.events.filter((e) => e.type === 'elected')).toHaveLength(1);
    for (const log of logs) expect(log.removed()).toEqual([]);
  });

  it('a client cut off longer than its session timeout reports lost, steps down first, then comes back on a new session and re-announces', async () => {
    await waitForZookeeperEnsembleLeader();
    const cluster = uniqueCluster('ens-cut');
    const fast = {
      election: { leaseDurationMs: 6000, renewDeadlineMs: 4000, retryPeriodMs: 500 },
      lock: { leaseDurationMs: 6000, renewDeadlineMs: 4000, retryPeriodMs: 500 },
      member: { heartbeatIntervalMs: 500, leaseDurationMs: 4000 },
      requestTimeoutMs: 1000,
    };
    const proxy = await TcpProxyGroup.start(ensemble().split(','));
    cleanups.push(() => proxy.close());
    const cut = await open(cluster, 'cut', proxy.connectString, fast, 3000);
    const store = registryStore(cut) as ZookeeperStore;
    const firstSession = store.session.sessionId;
    await cut.announce({ role: 'worker', id: 'cut', payload: { n: 1 } });
    const cutLeadership = cut.campaign('scheduler');
    const line = timeline([{ name: 'cut', leadership: cutLeadership }]);
    await cutLeadership.whenElected();
    const other = await open(cluster, 'other', ensemble(), fast, 3000);
    const otherLeadership = other.campaign('scheduler');
    line.add('other', otherLeadership);
    const states: { type: string; at: number; after?: string }[] = [];
    for (const type of ['suspended', 'lost', 'reconnected'] as const) cut.on(type, (e) => states.push({ type, at: performance.now(), ...('after' in e ? { after: e.after } : {}) }));
    const log = memberLog(other, 'worker');
    await waitFor(() => log.events.some((e) => e.type === 'added' && e.member.id === 'cut'), 5000, 'the other registry to see the cut-off member');

    proxy.cut('blackhole');
    await waitFor(() => states.some((s) => s.type === 'lost'), 15_000, 'the cut-off client to report lost');
    const lostAt = states.find((s) => s.type === 'lost')!.at;
    expect(cutLeadership.isLeader).toBe(false);
    const stepDown = line.events.find((e) => e.name === 'cut' && e.type === 'lost');
    expect(stepDown, 'the cut-off leader stepped down').toBeDefined();
    // At the latest with the lost event itself (the session timeout, 3 s, ends before the renew deadline, 4 s): core steps holders down on lost.
    expect(stepDown!.at).toBeLessThanOrEqual(lostAt + 50);
    // The other candidate takes over only after the cut-off one gave up, and its member expires for the peer.
    await waitFor(() => otherLeadership.isLeader, 15_000, 'the other registry to lead');
    await waitFor(() => log.events.some((e) => e.type === 'removed' && e.member.id === 'cut'), 15_000, 'the cut-off member to expire for its peer');
    line.assertOneLeaderAtATime();

    proxy.heal();
    await waitFor(() => states.some((s) => s.type === 'reconnected'), 15_000, 'the cut-off client to reconnect');
    expect(states.map((s) => (s.after ? `${s.type} after ${s.after}` : s.type))).toEqual(['suspended', 'lost', 'reconnected after lost']);
    expect(store.session.sessionId).not.toBe(firstSession);
    // It re-announces: the peer sees the member come back with its data.
    await waitFor(() => log.events.filter((e) => e.type === 'added' && e.member.id === 'cut').length === 2, 10_000, 'the member to be announced again');
    expect(log.events.map((e) => `${e.type} ${e.member.id}`)).toEqual(['added cut', 'removed cut', 'added cut']);
    expect((await other.members('worker')).map((m) => [m.id, m.payload])).toEqual([['cut', { n: 1 }]]);
    // Leadership stays with the one that took over; the returning client campaigns again as a follower.
    await observeFor(3 * fast.election.retryPeriodMs);
    expect(line.leaders()).toEqual(['other']);
    line.assertOneLeaderAtATime();
  });

  it('the whole ensemble restarted: clients reconnect, records survive, one leader, members listed, locks work', async () => {
    await waitForZookeeperEnsembleLeader();
    const cluster = uniqueCluster('ens-restart');
    const names = ['a', 'b'];
    const regs = await Promise.all(names.map((n) => open(cluster, n)));
    await Promise.all(regs.map((r, i) => r.announce({ role: 'worker', id: names[i]!, payload: { n: i } })));
    const candidates = regs.map((r, i) => ({ name: names[i]!, leadership: r.campaign('scheduler') }));
    const line = timeline(candidates);
    await waitFor(() => line.leaders().length === 1, 10_000, 'a Rollcall leader');
    const states = regs.map((r) => {
      const seen: string[] = [];
      for (const type of ['suspended', 'lost', 'reconnected'] as const) r.on(type, () => seen.push(type));
      return seen;
    });
    await stopServer('zookeeper-ensemble');
    await waitFor(() => states.every((s) => s.includes('suspended')), 10_000, 'both clients to be suspended');
    await startServer('zookeeper-ensemble');
    await waitFor(() => regs.every((r) => r.state === 'connected'), 30_000, 'both clients to reconnect');
    await waitFor(() => line.leaders().length === 1, 30_000, 'one Rollcall leader');
    await waitFor(async () => (await Promise.all(regs.map((r) => r.members('worker')))).every((m) => m.length === 2), 30_000, 'both members listed everywhere');
    line.assertOneLeaderAtATime();
    const lock = await regs[1]!.lock('after-restart', { timeoutMs: 20_000 });
    expect(lock.held).toBe(true);
    await lock.release();
    for (const s of states) expect(s.at(-1)).toBe('reconnected');
  });
});
