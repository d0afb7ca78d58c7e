import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, ErrorCode, type MemberEvent } from '../src/index.js';
import { MemoryStore } from '../src/testing.js';
import { GatedStore, Harness, SilentOutageStore, until } from './harness.js';

const timing = { member: { heartbeatIntervalMs: 5000, leaseDurationMs: 20000 } };

function collect(events: MemberEvent[]) {
  return (e: MemberEvent) => events.push(e);
}

describe('membership on the injected clock', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('heartbeats carry the payload; an unchanged heartbeat is no event', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const b = await h.registry('b', timing);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', collect(events));
    const member = await a.registry.announce({ role: 'worker', id: 'w1', payload: { status: 'NORMAL', load: 0.1 } });
    await h.clock.advance(0);
    await h.clock.advance(30_000);
    expect(events.map((e) => e.type)).toEqual(['added']);
    await member.update({ status: 'BUSY', load: 0.9 });
    await h.clock.advance(0);
    expect(events.map((e) => e.type)).toEqual(['added', 'updated']);
    expect(events[1]).toMatchObject({ member: { payload: { status: 'BUSY' } }, previous: { payload: { status: 'NORMAL' } } });
    expect((await b.registry.members('worker')).map((m) => m.id)).toEqual(['w1']);
  });

  it('a member that stops heartbeating is removed with its last data after its lease, by the observer clock', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const b = await h.registry('b', timing);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', collect(events));
    await a.registry.announce({ role: 'worker', id: 'w1', payload: { cpu: 3 } });
    await h.clock.advance(10_000); // heartbeats at 5000 and 10000 land
    a.store.partition();
    await h.clock.advance(19_999);
    expect(events.map((e) => e.type)).toEqual(['added']);
    await h.clock.advance(1);
    expect(events[1]).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w1', payload: { cpu: 3 } } });
    expect(h.backend.rows.size).toBe(0); // deleted with a compare-and-set
  });

  it('an expired record is deleted with a compare-and-set, so one renewed meanwhile survives, with no phantom removal', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    let muted = false;
    // The observer's watch drops puts while muted, as a stalled watch would: its view goes stale while A renews.
    const stale = new MemoryStore({ backend: h.backend, cluster: 'test' });
    const watch = stale.watch.bind(stale);
    stale.watch = (prefix, from, listener) => watch(prefix, from, { event: (e) => (muted && e.type === 'put' ? undefined : listener.event(e)), error: (e) => listener.error(e) });
    const staleRegistry = await createRegistry({ type: 'memory', identity: 'stale', ...timing }, { store: stale, clock: h.clock });
    const events: MemberEvent[] = [];
    staleRegistry.watchMembers('worker', collect(events));
    await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    await h.clock.advance(0);
    muted = true;
    await h.clock.advance(20_000); // A renewed 4 times; the stale observer saw none of it
    expect(events.map((e) => e.type)).toEqual(['added']); // its delete named an old version: CONFLICT, so no removal
    expect(h.backend.rows.size).toBe(1); // and changed nothing
    muted = false;
    await h.clock.advance(5_000); // the next heartbeat reaches the observer again
    expect(events.map((e) => e.type)).toEqual(['added']);
    await staleRegistry.close();
  });

  it('withdraw reaches peers through the watch at once', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const b = await h.registry('b', timing);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', collect(events));
    const member = await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 7 } });
    await h.clock.advance(0);
    await member.withdraw();
    await h.clock.advance(0);
    expect(events.map((e) => [e.type, e.type === 'removed' ? e.reason : '']).flat()).toEqual(['added', '', 'removed', 'deleted']);
    expect(events[1]!.member.payload).toEqual({ n: 7 });
  });

  it('a member cut off past its lease is lost, and comes back as a new incarnation', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const b = await h.registry('b', timing);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', collect(events));
    const states: string[] = [];
    a.registry.on('suspended', () => states.push('suspended'));
    a.registry.on('lost', () => states.push('lost'));
    a.registry.on('reconnected', (e) => states.push(`reconnected after ${e.after}`));
    await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    await h.clock.advance(1_000);
    a.store.partition();
    await h.clock.advance(30_000);
    expect(events.map((e) => e.type)).toEqual(['added', 'removed']);
    a.store.heal();
    await h.clock.advance(5_000);
    expect(events.map((e) => e.type)).toEqual(['added', 'removed', 'added']);
    expect(states).toEqual(['suspended', 'lost', 'reconnected after lost']);
  });

  it('after a disconnect, a relist emits exactly the difference', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const b = await h.registry('b', timing);
    const gone = await a.registry.announce({ role: 'worker', id: 'gone', payload: 1 });
    const changed = await a.registry.announce({ role: 'worker', id: 'changed', payload: 'old' });
    await a.registry.announce({ role: 'worker', id: 'same', payload: 'same' });
    await h.clock.advance(0);
    const events: MemberEvent[] = [];
    await b.registry.members('worker'); // listed: the watch below starts with the three
    b.registry.watchMembers('worker', collect(events));
    events.length = 0;
    b.store.partition();
    await gone.withdraw();
    await changed.update('new');
    await a.registry.announce({ role: 'worker', id: 'fresh', payload: 2 });
    h.backend.compact(); // B's revision is gone from history: it must relist
    b.store.heal();
    await h.clock.advance(3_000);
    const summary = events.map((e) => `${e.type} ${e.member.id} ${JSON.stringify(e.member.payload)}`).sort();
    expect(summary).toEqual(['added fresh 2', 'removed gone 1', 'updated changed "new"']);
  });

  it('an observer that is cut off does not expire members it merely could not see', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const b = await h.registry('b', timing);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', collect(events));
    await a.registry.announce({ role: 'worker', id: 'alive', payload: 1 });
    await h.clock.advance(0);
    b.store.partition();
    await h.clock.advance(60_000); // far past the lease; A heartbeats all along
    b.store.heal();
    await h.clock.advance(10_000);
    expect(events.map((e) => `${e.type} ${e.member.id}`)).toEqual(['added alive']);
  });

  it('an observer whose watch hid an outage does not expire a member that could not heartbeat through it', async () => {
    // The Kubernetes store resumes its watch across an API server restart without ending it:
    // the observer's calls fail (suspended) while its watch says nothing.
    h = new Harness();
    const a = await h.registry('a', timing);
    const silent = new SilentOutageStore({ backend: h.backend, cluster: 'test' });
    const b = await h.registry('b', timing, h.clock, silent);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', collect(events));
    await a.registry.announce({ role: 'worker', id: 'w1', payload: 1 });
    await h.clock.advance(0);
    silent.outage();
    a.store.partition(); // the server is down for everyone
    await h.clock.advance(60_000);
    silent.restore(); // back for the observer first; the member's next heartbeat is still to come
    await h.clock.advance(4_000);
    expect(events.map((e) => `${e.type} ${e.member.id}`)).toEqual(['added w1']); // the observer judged nothing through it
    a.store.heal();
    await h.clock.advance(10_000);
    // The member, past its own renew deadline, was lost and came back as a new incarnation: its removal is its own.
    expect(events.map((e) => `${e.type} ${e.member.id}`)).toEqual(['added w1', 'removed w1', 'added w1']);
  });

  it('a member that died while the observer was cut off is removed once the observer sees again', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const b = await h.registry('b', timing);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', collect(events));
    await a.registry.announce({ role: 'worker', id: 'dies', payload: 1 });
    await h.clock.advance(0);
    b.store.partition();
    a.store.partition(); // the member stops heartbeating for good
    await h.clock.advance(60_000);
    b.store.heal();
    await h.clock.advance(19_000); // a whole lease from when B sees again (its watch resumes within its 2 s backoff)
    expect(events.map((e) => `${e.type} ${e.member.id}`)).toEqual(['added dies']);
    await h.clock.advance(4_000);
    expect(events.map((e) => `${e.type} ${e.member.id}`)).toEqual(['added dies', 'removed dies']);
  });

  it('an update overtaken by withdraw rejects with CLOSED, and its payload is never written', async () => {
    h = new Harness();
    const gated = new GatedStore({ backend: h.backend, cluster: 'test' });
    const a = await h.registry('a', timing, h.clock, gated);
    const b = await h.registry('b', timing);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', collect(events));
    const member = await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    gated.hold();
    const first = member.update({ n: 2 });
    await until(() => (h.backend.rows.values().next().value?.record?.payload as { n?: number } | undefined)?.n === 2); // applied, reply held
    const second = member.update({ n: 3 }).then(
      () => 'resolved',
      (err: unknown) => err,
    ); // queued behind it
    const withdrawn = member.withdraw(); // overtakes the queued one
    gated.open();
    await expect(first).resolves.toBeUndefined();
    expect(await second).toMatchObject({ code: ErrorCode.CLOSED });
    await withdrawn;
    await h.clock.advance(0);
    expect(events.map((e) => [e.type, e.member.payload])).toEqual([
      ['added', { n: 1 }],
      ['updated', { n: 2 }],
      ['removed', { n: 2 }],
    ]);
  });

  // Found by the e2e soak on ZooKeeper: a heartbeat queued before the update went out after it
  // and carried its payload; withdraw then overtook the update's own write, which rejected with
  // CLOSED though peers had seen the payload.
  it('an update whose payload an earlier-queued heartbeat wrote resolves, though withdraw overtook its own write', async () => {
    h = new Harness();
    const gated = new GatedStore({ backend: h.backend, cluster: 'test' });
    const a = await h.registry('a', timing, h.clock, gated);
    const b = await h.registry('b', timing);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', collect(events));
    const member = await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    const payload = () => h.backend.rows.values().next().value?.record?.payload as { n?: number } | undefined;
    const version = () => h.backend.rows.values().next().value?.version;
    const announced = version();
    gated.hold();
    member.heartbeatNow(); // in flight, its reply held
    await until(() => version() !== announced);
    member.heartbeatNow(); // queued behind it
    const update = member.update({ n: 2 }).then(
      () => 'resolved',
      (err: unknown) => err,
    ); // queued behind the second heartbeat
    // The first reply comes; the second heartbeat goes out with the new payload and its reply is held.
    gated.open();
    gated.hold();
    await until(() => payload()?.n === 2);
    const withdrawn = member.withdraw(); // overtakes the update's own write
    gated.open();
    expect(await update).toBe('resolved');
    await withdrawn;
    await h.clock.advance(0);
    expect(events.map((e) => [e.type, e.member.payload])).toEqual([
      ['added', { n: 1 }],
      ['updated', { n: 2 }],
      ['removed', { n: 2 }],
    ]);
  });
});
