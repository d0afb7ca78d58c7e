import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, ErrorCode, type Registry } from '../src/index.js';
import { formatMicroTime, type LeaseRecord } from '../src/lease-record.js';
import { heartbeatKey, memberKey } from '../src/spi.js';
import { reaperElection } from '../src/record-key.js';
import type { WatchListener, WatchSubscription } from '../src/store.js';
import { MemoryStore } from '../src/testing.js';
import { Harness, memberLog, until } from './harness.js';

// Defaults: heartbeat every 5 s, member lease 20 s; elections 15 s / 10 s / 2 s.
const reaper = { member: { liveness: 'reaper' as const } };
const LEASE = 20_000;
const INTERVAL = 5_000;
const ELECTION_LEASE = 15_000;
const RETRY = 2_000;

/** A memory store that records the key of every change its watches deliver: what this process receives. */
class ReceivingStore extends MemoryStore {
  readonly received: string[] = [];
  override watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    return super.watch(prefix, fromRevision, {
      event: (e) => {
        if (e.type === 'put') this.received.push(e.record.key);
        else if (e.type === 'delete') this.received.push(e.key);
        listener.event(e);
      },
      error: (e) => listener.error(e),
    });
  }
}

/** A member's record as a process that crashed half-way left it. */
function record(id: string, payload?: unknown): LeaseRecord {
  const now = formatMicroTime(new Date());
  return { holderIdentity: id, leaseDurationSeconds: LEASE / 1000, acquireTime: now, renewTime: now, leaseTransitions: 1, ...(payload === undefined ? {} : { payload: payload as never }) };
}

/**
 * A member `a` announcing `w1` (with `payload`), `r` reading the role first (so it is the one to reap it) and `d`
 * reading it after: d's member log and its view of the reaper election.
 */
async function memberAndTwoReaders(h: Harness, payload?: string) {
  const a = await h.registry('a', reaper);
  const r = await h.registry('r', reaper);
  const d = await h.registry('d', reaper);
  memberLog(r.registry, 'worker', h.clock);
  await a.registry.announce({ role: 'worker', id: 'w1', ...(payload === undefined ? {} : { payload }) });
  return { a, r, d, seen: memberLog(d.registry, 'worker', h.clock), lead: reaperOf(h, d.registry, 'worker') };
}

/** Keys of `kind` (`member/`, `heartbeat/`) in the backend now. */
function keys(h: Harness, kind: string): string[] {
  return [...h.backend.rows.keys()].filter((k) => k.includes(kind)).sort();
}

/** Who leads `role`'s reaper election, as `registry` sees it; and when it changed. */
function reaperOf(h: Harness, registry: Registry, role: string) {
  const observer = registry.observe(reaperElection(role));
  const changes: { identity: string | undefined; at: number }[] = [];
  observer.on('changed', ({ leader }) => changes.push({ identity: leader?.identity, at: h.clock.now() }));
  return { get identity() { return observer.leader?.identity; }, changes };
}

describe('member liveness: reaper', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('readers of a role receive its joins and payload changes but no heartbeat, which renews its own record', async () => {
    h = new Harness();
    const a = await h.registry('a', reaper);
    const r = await h.registry('r', reaper);
    const readerStore = new ReceivingStore({ backend: h.backend, cluster: 'test' });
    const b = await h.registry('b', reaper, h.clock, readerStore);
    memberLog(r.registry, 'worker', h.clock); // r reads first: the first candidate, so the reaper
    const member = await a.registry.announce({ role: 'worker', id: 'w1', payload: 1 });
    const seen = memberLog(b.registry, 'worker', h.clock);
    const lead = reaperOf(h, b.registry, 'worker');
    await until(() => lead.identity === 'r' && seen.events.length === 1);
    const beat = await a.store.get(heartbeatKey('worker', 'w1'));
    readerStore.received.length = 0;
    await h.clock.advance(60_000); // 12 heartbeats
    await member.update(2);
    await h.clock.advance(0);
    expect(seen.summary()).toEqual(['added w1', 'updated w1']);
    expect(readerStore.received.filter((k) => !k.startsWith('election/'))).toEqual([memberKey('worker', 'w1')]);
    // The heartbeats did happen, on the heartbeat record.
    expect((await a.store.get(heartbeatKey('worker', 'w1')))!.version).not.toBe(beat!.version);
    expect((await a.store.get(memberKey('worker', 'w1')))!.record.payload).toBe(2);
  });

  it('a crashed member is removed with its last data one lease after its last heartbeat, by the reaper clock', async () => {
    h = new Harness();
    const a = await h.registry('a', reaper);
    const r = await h.registry('r', reaper);
    const b = await h.registry('b', reaper);
    const byReaper = memberLog(r.registry, 'worker', h.clock);
    await a.registry.announce({ role: 'worker', id: 'w1', payload: { cpu: 3 } });
    const seen = memberLog(b.registry, 'worker', h.clock);
    await h.clock.advance(2 * INTERVAL); // heartbeats at 5000 and 10000 land
    a.store.partition();
    await h.clock.advance(LEASE - 1);
    expect(seen.summary()).toEqual(['added w1']);
    await h.clock.advance(1);
    await until(() => seen.events.length === 2);
    expect(seen.events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w1', payload: { cpu: 3 } } });
    expect(byReaper.summary()).toEqual(['added w1', 'removed w1 expired']);
    await until(() => keys(h, 'member/').length + keys(h, 'heartbeat/').length === 0);
  });

  it('after the reaper crashes, its successor reaps from its own first sight: crash → removed within election lease + retry period + member lease', async () => {
    h = new Harness();
    const { a, r, seen, lead } = await memberAndTwoReaders(h, 'last');
    await h.clock.advance(2 * INTERVAL);
    expect(lead.identity).toBe('r');
    const crashedAt = h.clock.now();
    a.store.partition();
    r.store.partition();
    await h.clock.advanceUntil(() => seen.events.length === 2, ELECTION_LEASE + RETRY + LEASE + 1000);
    const takeover = lead.changes.find((c) => c.identity === 'd');
    expect(takeover).toBeDefined();
    expect(seen.events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w1', payload: 'last' } });
    // Not before a whole lease of the successor's own observation, and within the documented bound.
    expect(seen.at[1]! - takeover!.at).toBeGreaterThanOrEqual(LEASE);
    expect(seen.at[1]! - crashedAt).toBeLessThanOrEqual(ELECTION_LEASE + RETRY + LEASE);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired']);
  });

  it('a reaper cut off past its lease hands over; a member heartbeating meanwhile is never removed', async () => {
    h = new Harness();
    const { r, seen, lead } = await memberAndTwoReaders(h);
    await h.clock.advance(INTERVAL);
    r.store.partition();
    await h.clock.advanceUntil(() => lead.identity === 'd', ELECTION_LEASE + RETRY + 100);
    expect(lead.identity).toBe('d');
    r.store.heal();
    await h.clock.advance(3 * LEASE);
    expect(seen.summary()).toEqual(['added w1']);
    expect(lead.identity).toBe('d');
    expect(keys(h, 'member/')).toHaveLength(1);
  });

  it('a member record without a heartbeat record (a crash between the two writes of an announce) expires a lease after the reaper first saw it', async () => {
    h = new Harness();
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    await raw.create(memberKey('worker', 'w9'), record('w9', { half: true }));
    const r = await h.registry('r', reaper);
    const seen = memberLog(r.registry, 'worker', h.clock);
    await h.clock.advance(0);
    const startedAt = h.clock.now();
    expect(seen.summary()).toEqual(['added w9']);
    await h.clock.advance(LEASE - 1);
    expect(seen.summary()).toEqual(['added w9']);
    await h.clock.advance(1);
    await until(() => seen.events.length === 2);
    expect(seen.events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w9', payload: { half: true } } });
    expect(seen.at[1]! - startedAt).toBe(LEASE);
    await until(() => keys(h, 'member/').length === 0);
  });

  it('a heartbeat record left alone by a dead member is deleted a lease after the reaper first saw it, and no reader hears of it', async () => {
    h = new Harness();
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    await raw.create(heartbeatKey('worker', 'w8'), record('w8'));
    const a = await h.registry('a', reaper);
    const r = await h.registry('r', reaper);
    const seen = memberLog(r.registry, 'worker', h.clock);
    await a.registry.announce({ role: 'worker', id: 'w1' }); // the role has a live member: r campaigns
    await h.clock.advance(0);
    expect(keys(h, 'heartbeat/')).toHaveLength(2);
    await h.clock.advance(LEASE - 1);
    expect(keys(h, 'heartbeat/')).toHaveLength(2);
    await h.clock.advance(1);
    await until(() => keys(h, 'heartbeat/').length === 1);
    expect(keys(h, 'heartbeat/')[0]).toContain('w1');
    expect(seen.summary()).toEqual(['added w1']);
  });

  it('a live member whose member record vanished while it heartbeats (deleted by hand) is lost once the reaper deletes its lone heartbeat record, and is added again as a new incarnation', async () => {
    h = new Harness();
    const a = await h.registry('a', reaper);
    const r = await h.registry('r', reaper);
    const seen = memberLog(r.registry, 'worker', h.clock);
    await a.registry.announce({ role: 'worker', id: 'w1', payload: 7 });
    await h.clock.advance(INTERVAL);
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    const stored = await raw.get(memberKey('worker', 'w1'));
    await raw.delete(memberKey('worker', 'w1'), stored!.version);
    await h.clock.advance(0);
    const goneAt = h.clock.now();
    expect(seen.summary()).toEqual(['added w1', 'removed w1 deleted']);
    // Its heartbeats go on, alone; a lease later the reaper deletes that record: the next heartbeat finds it gone (lost), and a new incarnation is announced.
    await h.clock.advanceUntil(() => seen.events.length === 3, LEASE + INTERVAL + 100);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 deleted', 'added w1']);
    expect(seen.at[2]! - goneAt).toBeGreaterThanOrEqual(LEASE);
    expect(seen.at[2]! - goneAt).toBeLessThanOrEqual(LEASE + INTERVAL);
    expect(seen.events[2]!.member.payload).toBe(7);
    expect(keys(h, 'member/')).toHaveLength(1);
    expect(keys(h, 'heartbeat/')).toHaveLength(1);
  });

  it('announce writes both records and withdraw deletes both; a process that only announces campaigns for nothing; reaper election names are reserved', async () => {
    h = new Harness();
    const a = await h.registry('a', reaper);
    const member = await a.registry.announce({ role: 'worker', id: 'w1' });
    expect(keys(h, 'member/')).toHaveLength(1);
    expect(keys(h, 'heartbeat/')).toHaveLength(1);
    await member.withdraw();
    expect(keys(h, 'member/').length + keys(h, 'heartbeat/').length).toBe(0);
    expect(() => a.registry.campaign(reaperElection('worker'))).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    // A process that only announces watches nothing and campaigns for nothing.
    const only = await createRegistry({ type: 'memory', identity: 'o', ...reaper }, { store: new MemoryStore({ backend: h.backend, cluster: 'test' }), clock: h.clock });
    await only.announce({ role: 'worker', id: 'w2' });
    await h.clock.advance(3 * LEASE);
    expect(keys(h, 'election/')).toEqual([]);
    await only.close();
  });
});

describe('a reader judges each record by the liveness it declares, whatever its own mode (a cluster switching between heartbeat and reaper)', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('a heartbeat reader keeps a reaper-mode member while its heartbeat record is renewed, and reports it expired once that stops, by a read: it deletes nothing', async () => {
    h = new Harness();
    const a = await h.registry('a', reaper);
    const r = await h.registry('r', {});
    await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    const seen = memberLog(r.registry, 'worker');
    await until(() => seen.events.length === 1);
    await h.clock.advance(5 * LEASE); // its member record unchanged all along: only its heartbeat record moves
    expect(seen.summary()).toEqual(['added w1']);
    const renewed = (await r.registry.members('worker'))[0]!.renewTime!;
    expect(h.clock.wallNow().getTime() - renewed.getTime()).toBeLessThanOrEqual(INTERVAL); // its last heartbeat, not its announce
    a.store.partition();
    await h.clock.advanceUntil(() => seen.events.length === 2, LEASE + INTERVAL);
    expect(seen.events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w1', payload: { n: 1 } } });
    // Nobody reaps here (no reaper-mode reader): its records stay, and a heartbeat after the partition brings it back.
    expect(h.backend.rows.get(`test/${memberKey('worker', 'w1')}`)).toBeDefined();
    a.store.heal();
    await h.clock.advanceUntil(() => seen.events.length === 3, 2 * INTERVAL);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired', 'added w1']);
  });

  it('a reaper-mode reader judges a heartbeat-mode member by its lease: kept while it heartbeats, expired (marked and deleted) once it stops', async () => {
    h = new Harness();
    const a = await h.registry('a', {});
    const r = await h.registry('r', reaper);
    await a.registry.announce({ role: 'worker', id: 'w1' });
    const seen = memberLog(r.registry, 'worker');
    await until(() => seen.events.length === 1);
    await h.clock.advance(5 * LEASE);
    expect(seen.summary()).toEqual(['added w1']);
    a.store.partition();
    await h.clock.advanceUntil(() => seen.events.length === 2, LEASE + INTERVAL + RETRY);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired']);
    await until(() => h.backend.rows.get(`test/${memberKey('worker', 'w1')}`) === undefined);
  });
});
