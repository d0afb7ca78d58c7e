import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode } from '../src/index.js';
import { electionKey, memberKey } from '../src/spi.js';
import type { WatchListener, WatchSubscription } from '../src/store.js';
import { MemoryStore } from '../src/testing.js';
import { Harness, memberLog, until } from './harness.js';

// Defaults: heartbeat every 5 s, member lease 20 s; elections and locks 15 s / 10 s / 2 s.
const LEASE = 20_000;
const INTERVAL = 5_000;

/** A memory store that counts the writes it is asked to make: the memory backend's own count of this client's writes. */
class CountingStore extends MemoryStore {
  writes = 0;
  override async create(...args: Parameters<MemoryStore['create']>): ReturnType<MemoryStore['create']> {
    this.writes++;
    return super.create(...args);
  }
  override async update(...args: Parameters<MemoryStore['update']>): ReturnType<MemoryStore['update']> {
    this.writes++;
    return super.update(...args);
  }
  override async delete(...args: Parameters<MemoryStore['delete']>): ReturnType<MemoryStore['delete']> {
    this.writes++;
    return super.delete(...args);
  }
}

describe.each(['heartbeat', 'reaper'] as const)('registry.readOnly, %s mode', (liveness) => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('judges a crashed member expired as its mode does and writes nothing: no mark, no delete, no reaper campaign', async () => {
    h = new Harness();
    const mode = { member: { liveness } };
    const a = await h.registry('a', mode);
    const reader = await h.registry('viewer', { ...mode, readOnly: true }, h.clock, new CountingStore({ backend: h.backend, cluster: 'test' }));
    await a.registry.announce({ role: 'worker', id: 'w1', payload: { cpu: 3 } });
    a.registry.campaign('master');
    await a.registry.lock('jobs');
    const seen = memberLog(reader.registry, 'worker');
    await until(() => seen.events.length === 1);
    expect(await reader.registry.elections()).toMatchObject([{ name: 'master', holder: { identity: 'a' } }]);
    await h.clock.advance(2 * INTERVAL);
    const members = await reader.registry.members('worker');
    // A registry opened now sees the same last heartbeat at its first call.
    const late = await h.registry('late', { ...mode, readOnly: true });
    expect((await late.registry.members('worker'))[0]!.renewTime).toEqual(members[0]!.renewTime);
    expect(members).toMatchObject([{ id: 'w1', leaseDurationMs: LEASE }]);
    // Its last heartbeat, not its announce: the heartbeats at 5 and 10 s.
    expect(h.clock.wallNow().getTime() - members[0]!.renewTime!.getTime()).toBeLessThanOrEqual(INTERVAL);
    a.store.partition();
    await h.clock.advance(LEASE - 1);
    expect(seen.summary()).toEqual(['added w1']);
    await h.clock.advanceUntil(() => seen.events.length === 2, INTERVAL);
    expect(seen.events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w1', payload: { cpu: 3 } } });
    await h.clock.advance(LEASE);
    expect((await reader.registry.elections())[0]).toMatchObject({ name: 'master', holder: undefined });
    expect(reader.store.writes).toBe(0);
    // Nothing of the member was touched: the crashed one's records are as it left them.
    expect(await reader.store.get(memberKey('worker', 'w1'))).toBeDefined();
  });

  it('refuses announce, campaign, lock and tryLock with PERMISSION_DENIED before writing', async () => {
    h = new Harness();
    const reader = await h.registry('viewer', { member: { liveness }, readOnly: true }, h.clock, new CountingStore({ backend: h.backend, cluster: 'test' }));
    await expect(reader.registry.announce({ role: 'worker' })).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED, message: expect.stringContaining('registry.readOnly') });
    expect(() => reader.registry.campaign('master')).toThrow(expect.objectContaining({ code: ErrorCode.PERMISSION_DENIED }));
    await expect(reader.registry.lock('jobs')).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    await expect(reader.registry.tryLock('jobs')).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    expect(reader.store.writes).toBe(0);
    expect(await reader.store.get(electionKey('master'))).toBeUndefined();
  });
});

describe('registry.readOnly, reaper mode', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('a member whose heartbeat comes back after its expiry is added again; the reaper deleting it is no second removal', async () => {
    h = new Harness();
    const mode = { member: { liveness: 'reaper' as const } };
    const a = await h.registry('a', mode);
    const reader = await h.registry('viewer', { ...mode, readOnly: true }, h.clock, new CountingStore({ backend: h.backend, cluster: 'test' }));
    await a.registry.announce({ role: 'worker', id: 'w1' });
    const seen = memberLog(reader.registry, 'worker');
    await until(() => seen.events.length === 1);
    a.store.partition();
    await h.clock.advanceUntil(() => seen.events.length === 2, LEASE + INTERVAL);
    a.store.heal();
    await h.clock.advanceUntil(() => seen.events.length === 3, 2 * INTERVAL);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired', 'added w1']);
    // Now a reaper that writes: it reaps the member once it is gone for good; the reader reports nothing twice.
    const reaper = await h.registry('r', mode);
    await reaper.registry.members('worker');
    a.store.partition();
    await h.clock.advanceUntil(() => ![...h.backend.rows.keys()].some((k) => k.includes('member/')), 3 * LEASE);
    await h.clock.advance(INTERVAL);
    expect(seen.summary()).toEqual(['added w1', 'removed w1 expired', 'added w1', 'removed w1 expired']);
    expect(reader.store.writes).toBe(0);
  });
});

/** A memory store whose watch misses marks, as a watch that coalesces a mark and the delete after it does (ZooKeeper, SQL polling). */
class CoalescingStore extends MemoryStore {
  override watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    return super.watch(prefix, fromRevision, { event: (e) => (e.type === 'put' && e.record.record.holderIdentity === '' ? undefined : listener.event(e)), error: (e) => listener.error(e) });
  }
}

describe('a member gone is expired or deleted by the one rule, on this reader\'s own clock', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  // The removal's reason is the reader's own judgement (judgeExpiry on its monotonic clock), never the writer's wall-clock renewTime.
  it('a reader that missed the mark: expired when its own clock saw the lease run out first (confirmed by a read), deleted when the record went before; a member withdrawn: deleted', async () => {
    h = new Harness();
    const a = await h.registry('a');
    await a.registry.announce({ role: 'worker', id: 'w1' });
    await a.registry.announce({ role: 'worker', id: 'w3' });
    await h.clock.advance(2 * INTERVAL + 1000);
    a.store.partition(); // crashed 1 s after its heartbeat at 10 s
    const viewer = await h.registry('viewer', { readOnly: true }, h.clock, new CoalescingStore({ backend: h.backend, cluster: 'test' }));
    const seen = memberLog(viewer.registry, 'worker');
    await until(() => seen.events.length === 2);
    // b starts reading after the viewer: its judgement (from 12 s) runs out after the viewer's (from 11 s).
    await h.clock.advance(1000);
    const b = await h.registry('b');
    await b.registry.members('worker');
    const w2 = await b.registry.announce({ role: 'worker', id: 'w2' });
    await until(() => seen.events.length === 3);
    await w2.withdraw();
    await until(() => seen.events.length === 4);
    await h.clock.advanceUntil(() => seen.events.length === 6, LEASE);
    expect(seen.summary()).toEqual(['added w1', 'added w3', 'added w2', 'removed w2 deleted', 'removed w1 expired', 'removed w3 expired']);
    expect(h.clock.now()).toBeLessThan(12_000 + LEASE); // the viewer's own judgement, before b marked
    // Now one whose record goes (by b's mark, which this watch misses) before the viewer's clock saw its lease run out.
    const c = await h.registry('c');
    await c.registry.announce({ role: 'worker', id: 'w4' });
    await until(() => seen.events.length === 7);
    c.store.partition();
    const late = await h.registry('late', { readOnly: true }, h.clock, new CoalescingStore({ backend: h.backend, cluster: 'test' }));
    await h.clock.advance(INTERVAL); // late starts judging w4 a heartbeat after b did
    const lateSeen = memberLog(late.registry, 'worker');
    await until(() => lateSeen.events.length === 1);
    await h.clock.advanceUntil(() => lateSeen.events.length === 2, LEASE);
    expect(lateSeen.summary()).toEqual(['added w4', 'removed w4 deleted']);
    expect(await late.store.get(memberKey('worker', 'w4'))).toBeUndefined();
  });
});
