import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type Leadership, type Logger, type MemberEvent, type Registry } from '@rollcall/core';
import { uniqueCluster, waitFor } from '@rollcall/conformance';
import { compactServer, restartServer, TcpProxy } from '@rollcall/tools/testenv';
import { etcdEndpoints, rawClient } from './support/etcd.js';

// Leases long enough that an etcd restart (a few seconds) does not expire anyone by itself.
const ELECTION = { leaseDurationMs: 8000, renewDeadlineMs: 6000, retryPeriodMs: 300 };
const MEMBER = { heartbeatIntervalMs: 500, leaseDurationMs: 10_000 };
const SETTLE_MS = 20_000;

const raw = rawClient();
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((o) => o.close()));
});
afterAll(() => raw.close());

// A graceful etcd stop waits for open watch streams and takes up to ~8 s here: with these, a leader outlasts it.
const LONG_ELECTION = { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 500 };
const LONG_MEMBER = { heartbeatIntervalMs: 1000, leaseDurationMs: 30_000 };

async function open(cluster: string, identity: string, options: { endpoints?: string[]; logger?: Logger; long?: boolean } = {}): Promise<Registry> {
  const election = options.long ? LONG_ELECTION : ELECTION;
  const member = options.long ? LONG_MEMBER : MEMBER;
  const registry = await createRegistry(
    { type: 'etcd', cluster, identity, election, lock: election, member, requestTimeoutMs: 1000, etcd: { endpoints: options.endpoints ?? etcdEndpoints(), dialTimeoutMs: 3000 } },
    options.logger ? { logger: options.logger } : {},
  );
  opened.push(registry);
  return registry;
}

/** Each candidate's terms on its own monotonic clock; a violation is a term that starts while another candidate's is open. */
function recordTerms(leaderships: Leadership[]) {
  const terms: { candidate: number; token: number; start: number; end?: number }[] = [];
  const violations: string[] = [];
  leaderships.forEach((l, i) => {
    l.on('elected', ({ fencingToken }) => {
      const open = terms.filter((t) => t.end === undefined && t.candidate !== i);
      if (open.length) violations.push(`candidate ${i} elected (token ${fencingToken}) while ${open.map((t) => t.candidate).join(', ')} still led`);
      terms.push({ candidate: i, token: fencingToken, start: performance.now() });
    });
    l.on('lost', () => {
      const term = terms.findLast((t) => t.candidate === i && t.end === undefined);
      if (term) term.end = performance.now();
    });
  });
  return { terms, violations };
}

/** A per-member event log; `phantoms` lists events that contradict the member's previous state. */
function memberLog(registry: Registry, role: string) {
  const events: MemberEvent[] = [];
  const present = new Map<string, unknown>();
  const phantoms: string[] = [];
  registry.watchMembers(role, (e) => {
    events.push(e);
    const was = present.has(e.member.id);
    if (e.type === 'added' && was) phantoms.push(`added ${e.member.id} twice`);
    if (e.type !== 'added' && !was) phantoms.push(`${e.type} ${e.member.id} while absent`);
    if (e.type === 'removed') present.delete(e.member.id);
    else present.set(e.member.id, e.member.payload);
  });
  return { events, present, phantoms, summary: (from = 0) => events.slice(from).map((e) => `${e.type} ${e.member.id}`) };
}

describe('etcd restarts', () => {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`mid-election (${signal}): leaders keep their term or step down before anyone else takes over; one leader after`, async () => {
      const cluster = uniqueCluster('restart-e');
      const registries = await Promise.all([0, 1, 2].map((i) => open(cluster, `c${i}`)));
      const leaderships = registries.map((r) => r.campaign('scheduler'));
      const { terms, violations } = recordTerms(leaderships);
      // Restart while the first election is in flight.
      const restarted = restartServer('etcd', { signal });
      await restarted;
      await waitFor(() => registries.every((r) => r.state === 'connected') && leaderships.filter((l) => l.isLeader).length === 1, SETTLE_MS, 'one leader after the restart');
      // Handing over must still work through the watch after the restart.
      const leader = leaderships.findIndex((l) => l.isLeader);
      const before = leaderships[leader]!.fencingToken!;
      await leaderships[leader]!.resign();
      await waitFor(() => leaderships.some((l, i) => i !== leader && l.isLeader), SETTLE_MS, 'a new leader after resign');
      const next = leaderships.find((l) => l.isLeader)!;
      expect(next.fencingToken).toBeGreaterThan(before);
      expect(violations).toEqual([]);
      const tokens = terms.map((t) => t.token);
      expect([...tokens].sort((a, b) => a - b)).toEqual(tokens);
      expect(new Set(tokens).size).toBe(tokens.length);
    });
  }

  it('mid-term and mid-heartbeat: the leader keeps its term, members stay, views converge with no lost or phantom events', async () => {
    const cluster = uniqueCluster('restart-h');
    const a = await open(cluster, 'a', { long: true });
    const b = await open(cluster, 'b', { long: true });
    const leadership = a.campaign('scheduler');
    await waitFor(() => leadership.isLeader, 5000, 'a to lead');
    const token = leadership.fencingToken;
    const follower = b.campaign('scheduler');
    const { violations } = recordTerms([leadership, follower]);
    const log = memberLog(b, 'worker');
    const w1 = await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    const w2 = await a.announce({ role: 'worker', id: 'w2', payload: { n: 1 } });
    await waitFor(() => log.present.size === 2, 5000, 'b to see w1 and w2');
    const mark = log.events.length;

    await restartServer('etcd');
    await waitFor(() => a.state === 'connected' && b.state === 'connected', SETTLE_MS, 'both registries to reconnect');
    await w2.withdraw();
    await w1.update({ n: 2 });
    await a.announce({ role: 'worker', id: 'w3', payload: { n: 1 } });
    await waitFor(() => log.present.size === 2 && log.present.has('w3') && (log.present.get('w1') as { n: number }).n === 2, SETTLE_MS, 'b to converge');

    expect(log.summary(mark)).toEqual(['removed w2', 'updated w1', 'added w3']);
    expect(log.phantoms).toEqual([]);
    expect((await b.members('worker')).map((m) => m.id).sort()).toEqual(['w1', 'w3']);
    // a's own view is watch-fed too: it converges to the same set.
    await waitFor(async () => (await a.members('worker')).map((m) => m.id).sort().join() === 'w1,w3', 5000, "a's view to converge");
    // The leader renewed across the restart: same term, no one else elected.
    expect(leadership.isLeader).toBe(true);
    expect(leadership.fencingToken).toBe(token);
    expect(follower.isLeader).toBe(false);
    expect(violations).toEqual([]);
  });
});

describe('compaction while a watcher is disconnected', () => {
  it('the watcher relists on reconnect and emits exactly the difference', async () => {
    const cluster = uniqueCluster('compact');
    const proxy = await TcpProxy.start(etcdEndpoints()[0]!);
    opened.push(proxy);
    const logged: { fields: Record<string, unknown>; message?: string }[] = [];
    const log = (fields: Record<string, unknown> | string, message?: string) => logged.push(typeof fields === 'string' ? { fields: {}, message: fields } : { fields, message });
    const writer = await open(cluster, 'writer');
    const watcher = await open(cluster, 'watcher', { endpoints: [`http://${proxy.address}`], logger: { debug: log, info: log, warn: log, error: log } as Logger });
    const view = memberLog(watcher, 'worker');
    const gone = await writer.announce({ role: 'worker', id: 'gone', payload: { last: 'words' } });
    const changed = await writer.announce({ role: 'worker', id: 'changed', payload: { v: 1 } });
    await writer.announce({ role: 'worker', id: 'same', payload: { v: 1 } });
    await waitFor(() => view.present.size === 3, 5000, 'the watcher to see three members');
    const mark = view.events.length;

    proxy.cut('reset');
    await waitFor(() => watcher.state === 'suspended', 5000, 'the watcher to notice');
    await gone.withdraw();
    await changed.update({ v: 2 });
    await writer.announce({ role: 'worker', id: 'new', payload: { v: 1 } });
    // Enough revisions pass that the watcher's last one is compacted away.
    await compactServer('etcd');
    proxy.heal();

    await waitFor(() => view.present.has('new') && !view.present.has('gone') && (view.present.get('changed') as { v: number }).v === 2, SETTLE_MS, 'the watcher to converge');
    expect(view.summary(mark).sort()).toEqual(['added new', 'removed gone', 'updated changed']);
    const removed = view.events.slice(mark).find((e) => e.type === 'removed')!;
    expect(removed.member.payload).toEqual({ last: 'words' });
    expect(view.phantoms).toEqual([]);
    // It was the relist path: the resumed watch was told its revision is gone.
    expect(logged.some((l) => l.fields.relist === true)).toBe(true);
  });
});

describe('a key edited by hand into garbage', () => {
  it('is reported as corrupt and never stops the watch', async () => {
    const cluster = uniqueCluster('garbage');
    const a = await open(cluster, 'a');
    const b = await open(cluster, 'b');
    const corrupt: string[] = [];
    b.on('corruptRecord', ({ key, error }) => corrupt.push(`${key} ${error.code}`));
    const view = memberLog(b, 'worker');
    await b.elections(); // b reads every election too
    const w1 = await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    await waitFor(() => view.present.has('w1'), 5000, 'w1');

    await raw.put(`/rollcall/${cluster}/member/worker/w9`).value('garbage{');
    await raw.put(`/rollcall/${cluster}/election/scheduler`).value('[]');
    await raw.put(`/rollcall/${cluster}/not-a-record-key`).value('{"holderIdentity":"x","leaseDurationSeconds":1,"leaseTransitions":0}');
    await waitFor(() => corrupt.length === 2, 5000, 'two corrupt records reported');
    expect(corrupt.sort()).toEqual(['election/scheduler CORRUPT_RECORD', 'member/worker/w9 CORRUPT_RECORD']);

    // The watch goes on: new members and updates still arrive, and a campaign can replace the corrupt election record.
    await a.announce({ role: 'worker', id: 'w2' });
    await w1.update({ n: 2 });
    await waitFor(() => view.present.has('w2') && (view.present.get('w1') as { n: number }).n === 2, 5000, 'w2 and the update of w1');
    expect(view.phantoms).toEqual([]);
    expect([...view.present.keys()].sort()).toEqual(['w1', 'w2']);
    // A fresh registry lists the garbage too, and still starts.
    const c = await open(cluster, 'c');
    expect((await c.members('worker')).map((m) => m.id).sort()).toEqual(['w1', 'w2']);
  });
});
