import { afterEach, describe, expect, it } from 'vitest';
import type { LeaseEvent } from '../src/index.js';
import { registryStore } from '../src/admin.js';
import { electionKey } from '../src/spi.js';
import { MemoryStore } from '../src/testing.js';
import { Harness } from './harness.js';

/** `<event> <name> <holder> <token>`, a lock hold's identity cut to its registry's (`a.1f3c9a1` → `a`). */
function describeEvent(e: LeaseEvent): string {
  return `${e.type === 'changed' ? e.reason : e.type} ${e.lease.name} ${e.lease.holder?.identity.split('.')[0] ?? '-'} ${e.lease.fencingToken}`;
}

describe('roles(), elections(), locks() and their watches on the injected clock', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('roles() lists the roles with a member this process sees, sorted; a role goes when its last member withdraws or expires', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const o = await h.registry('observer');
    expect(await o.registry.roles()).toEqual([]);
    const worker = await a.registry.announce({ role: 'worker', id: 'w1' });
    await a.registry.announce({ role: 'master', id: 'm1' });
    await a.registry.announce({ role: 'api', id: 'x1' });
    await h.clock.advance(0);
    expect(await o.registry.roles()).toEqual(['api', 'master', 'worker']);
    await worker.withdraw();
    await h.clock.advance(0);
    expect(await o.registry.roles()).toEqual(['api', 'master']);
    a.store.partition(); // the remaining members stop heartbeating; their last write was at 0
    await h.clock.advance(19_999);
    expect(await o.registry.roles()).toEqual(['api', 'master']);
    await h.clock.advance(1);
    expect(await o.registry.roles()).toEqual([]);
  });

  it('elections() and locks(): every record, sorted, with its holder now and its latest fencing token', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const o = await h.registry('observer');
    const scheduler = a.registry.campaign('scheduler');
    b.registry.campaign('reports');
    const jobs = await a.registry.lock('jobs');
    await h.clock.advance(0);
    const elections = await o.registry.elections();
    expect(elections.map((e) => [e.name, e.holder?.identity, e.fencingToken])).toEqual([
      ['reports', 'b', 1],
      ['scheduler', 'a', 1],
    ]);
    const start = h.clock.wallNow(); // wall time at monotonic 0, when both were taken
    expect(elections[1]).toEqual({ name: 'scheduler', holder: { identity: 'a', fencingToken: 1, acquireTime: start, renewTime: start }, fencingToken: 1, leaseDurationMs: 15_000, renewTime: start });
    const locks = await o.registry.locks();
    expect(locks).toHaveLength(1);
    expect(locks[0]).toMatchObject({ name: 'jobs', fencingToken: 1, leaseDurationMs: 15_000 });
    expect(locks[0]!.holder!.identity).toMatch(/^a\./);
    // Freed records stay, with no holder and the last token: the next holder's is larger.
    await h.clock.advance(3_000);
    await scheduler.resign();
    await jobs.release();
    await h.clock.advance(0);
    expect((await o.registry.elections()).find((e) => e.name === 'scheduler')).toMatchObject({ holder: undefined, fencingToken: 1, renewTime: new Date(start.getTime() + 3_000) });
    expect(await o.registry.locks()).toMatchObject([{ name: 'jobs', holder: undefined, fencingToken: 1 }]);
    const again = await b.registry.tryLock('jobs');
    await h.clock.advance(0);
    expect(await o.registry.locks()).toMatchObject([{ name: 'jobs', holder: { identity: expect.stringMatching(/^b\./), fencingToken: again!.fencingToken }, fencingToken: 2 }]);
  });

  it('elections() and locks() judge a holder by the clock when read, not when a timer last ran', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const o = await h.registry('observer');
    await o.registry.elections(); // watched from here on
    await o.registry.locks();
    a.registry.campaign('scheduler');
    await a.registry.lock('jobs');
    await h.clock.advance(0);
    a.store.partition(); // the last writes reached the observer at 0
    h.clock.jump(14_999); // a paused process resumes: no timer has run
    expect((await o.registry.elections())[0]!.holder?.identity).toBe('a');
    expect((await o.registry.locks())[0]!.holder?.identity).toMatch(/^a\./);
    h.clock.jump(1);
    expect(await o.registry.elections()).toMatchObject([{ name: 'scheduler', holder: undefined, fencingToken: 1 }]);
    expect(await o.registry.locks()).toMatchObject([{ name: 'jobs', holder: undefined, fencingToken: 1 }]);
  });

  it('watchElections(): added for each, then a change of leader or term only; renewals are no events', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const o = await h.registry('observer');
    const scheduler = a.registry.campaign('scheduler');
    await h.clock.advance(0);
    const events: string[] = [];
    const times: number[] = [];
    const subscription = o.registry.watchElections((e) => {
      events.push(describeEvent(e));
      times.push(h.clock.now());
    });
    await h.clock.advance(0); // the first watch lists every election
    expect(events).toEqual(['added scheduler a 1']);
    await h.clock.advance(60_000); // thirty renewals
    expect(events).toEqual(['added scheduler a 1']);
    const reports = b.registry.campaign('reports');
    await h.clock.advance(0);
    await scheduler.resign();
    await h.clock.advance(0);
    const rejoined = a.registry.campaign('scheduler');
    await h.clock.advance(0);
    expect(events.slice(1)).toEqual(['added reports b 1', 'released scheduler - 1', 'acquired scheduler a 2']);
    // b is cut off: its last renewal reached the observer at 60000, so its lease runs out at 75000 by the observer's clock.
    await h.clock.advance(500);
    b.store.partition();
    await h.clock.advance(14_499);
    expect(events).toHaveLength(4);
    await h.clock.advance(2);
    expect(events[4]).toBe('expired reports - 1');
    expect(times[4]).toBeGreaterThanOrEqual(75_000);
    expect(times[4]).toBeLessThanOrEqual(75_001);
    b.store.heal();
    await h.clock.advanceUntil(() => reports.isLeader, 5_000);
    expect(events[5]).toBe('acquired reports b 2');
    // A deleted record (by hand, or by an operator's tool) is removed with its last state.
    await rejoined.resign();
    await h.clock.advance(0);
    const store = registryStore(o.registry);
    const record = await store.get(electionKey('scheduler'));
    await store.delete(electionKey('scheduler'), record!.version);
    await h.clock.advance(0);
    expect(events.slice(6)).toEqual(['released scheduler - 2', 'removed scheduler - 2']);
    subscription.close();
    a.registry.campaign('scheduler');
    await h.clock.advance(0);
    expect(events).toHaveLength(8);
    expect((await o.registry.elections()).map((e) => `${e.name} ${e.holder?.identity}`)).toEqual(['reports b', 'scheduler a']);
  });

  it('watchLocks(): acquired, released, expired by the observer clock, and taken over with a larger token', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const o = await h.registry('observer');
    const first = await a.registry.lock('jobs');
    await h.clock.advance(0);
    const events: string[] = [];
    o.registry.watchLocks((e) => events.push(describeEvent(e)));
    await h.clock.advance(0); // the first watch lists every lock
    expect(events).toEqual(['added jobs a 1']);
    await h.clock.advance(30_000);
    await first.release();
    await h.clock.advance(0);
    const second = await a.registry.lock('jobs');
    await h.clock.advance(0);
    expect(events).toEqual(['added jobs a 1', 'released jobs - 1', 'acquired jobs a 2']);
    expect(second.fencingToken).toBe(2);
    a.store.partition(); // its last write, the acquisition, reached the observer at 30000
    const waiting = b.registry.lock('jobs');
    await h.clock.advance(14_999);
    expect(events).toHaveLength(3);
    await h.clock.advance(2);
    expect(events[3]).toBe('expired jobs - 2');
    const taken = await waiting;
    await h.clock.advance(0);
    expect(events[4]).toBe(`acquired jobs b ${taken.fencingToken}`);
    expect(taken.fencingToken).toBe(3);
  });

  it('an observer cut off expires no one it merely could not see, and after a relist reports exactly the difference', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const o = await h.registry('observer');
    a.registry.campaign('scheduler');
    const jobs = await a.registry.lock('jobs');
    await h.clock.advance(0);
    const events: string[] = [];
    o.registry.watchElections((e) => events.push(describeEvent(e)));
    o.registry.watchLocks((e) => events.push(describeEvent(e)));
    await h.clock.advance(0); // the first watches list every election and lock
    expect(events).toEqual(['added scheduler a 1', 'added jobs a 1']);
    o.store.partition();
    await h.clock.advance(60_000); // far past every lease; a renews all along, unseen
    expect(events).toHaveLength(2);
    expect((await o.registry.elections())[0]!.holder?.identity).toBe('a');
    await jobs.release();
    b.registry.campaign('reports');
    await h.clock.advance(0);
    h.backend.compact(); // the observer's revision is gone: it must relist
    o.store.heal();
    await h.clock.advance(3_000);
    expect(events.slice(2).sort()).toEqual(['added reports b 1', 'released jobs - 1']);
  });

  it('a watch silently behind reports no phantom expiry: a read must find the record unchanged first', async () => {
    h = new Harness();
    const a = await h.registry('a');
    let muted = false;
    // The observer's watch drops puts while muted, as a watch silently behind would; the cache stays "live".
    const stale = new MemoryStore({ backend: h.backend, cluster: 'test' });
    const watch = stale.watch.bind(stale);
    stale.watch = (prefix, from, listener) => watch(prefix, from, { event: (e) => (muted && e.type === 'put' ? undefined : listener.event(e)), error: (e) => listener.error(e) });
    const o = await h.registry('observer', {}, h.clock, stale);
    a.registry.campaign('scheduler');
    await h.clock.advance(0);
    const events: string[] = [];
    const times: number[] = [];
    o.registry.watchElections((e) => {
      events.push(describeEvent(e));
      times.push(h.clock.now());
    });
    const observer = o.registry.observe('scheduler');
    muted = true;
    await h.clock.advance(60_000); // a renews thirty times, unseen
    expect(events).toEqual(['added scheduler a 1']);
    expect(observer.leader?.identity).toBe('a');
    muted = false;
    await h.clock.advance(2_500); // the renewal at 62000 comes through
    a.store.partition(); // and is a's last
    await h.clock.advance(14_499);
    expect(events).toEqual(['added scheduler a 1']);
    await h.clock.advance(2);
    expect(events).toEqual(['added scheduler a 1', 'expired scheduler - 1']);
    expect(times[1]).toBeGreaterThanOrEqual(77_000);
    expect(times[1]).toBeLessThanOrEqual(77_001);
    expect(observer.leader).toBeUndefined();
  });

  it('a leader that died while the observer was cut off expires a whole lease after the observer sees again', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const o = await h.registry('observer');
    a.registry.campaign('scheduler');
    await h.clock.advance(0);
    const events: string[] = [];
    o.registry.watchElections((e) => events.push(describeEvent(e)));
    const observer = o.registry.observe('scheduler');
    o.store.partition();
    a.store.partition(); // the leader stops renewing for good
    await h.clock.advance(60_000);
    expect(observer.leader?.identity).toBe('a');
    o.store.heal();
    await h.clock.advance(14_000); // the watch resumes within its 2 s backoff; a lease from then has not run out
    expect(events).toEqual(['added scheduler a 1']);
    expect(observer.leader?.identity).toBe('a');
    await h.clock.advance(4_000);
    expect(events).toEqual(['added scheduler a 1', 'expired scheduler - 1']);
    expect(observer.leader).toBeUndefined();
  });
});
