import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type MemberEvent } from '../src/index.js';
import { formatMicroTime, type LeaseRecord } from '../src/lease-record.js';
import type { WatchListener, WatchSubscription } from '../src/store.js';
import { MemoryBackend, MemoryStore } from '../src/testing.js';
import { Harness } from './harness.js';

const timing = { member: { heartbeatIntervalMs: 5000, leaseDurationMs: 20000 } };
const KEY = 'member/worker/w1';

/** A memory store whose watch drops deletes while `coalescing`: a delete and the create after it reach the reader as one put, as a coalescing watch delivers them. */
class CoalescingStore extends MemoryStore {
  coalescing = false;
  heldReads = 0;
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  /** Reads from now on wait for `releaseReads()`: a confirmation in flight. */
  holdReads(): void {
    this.gate = new Promise((resolve) => (this.openGate = resolve));
  }
  releaseReads(): void {
    this.openGate?.();
    this.gate = this.openGate = undefined;
  }
  override async get(...args: Parameters<MemoryStore['get']>): ReturnType<MemoryStore['get']> {
    const gate = this.gate;
    if (gate) this.heldReads++;
    await gate;
    return super.get(...args);
  }
  override watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    return super.watch(prefix, fromRevision, { event: (e) => (this.coalescing && e.type === 'delete' ? undefined : listener.event(e)), error: (e) => listener.error(e) });
  }
}

/** One line per event, with the incarnation it names. */
function log(events: MemberEvent[]): string[] {
  return events.map((e) => `${e.type} ${e.member.id}@${e.member.incarnation}${e.type === 'removed' ? ` ${e.reason}` : ''}`);
}

describe('member incarnations (the directory rule) on the injected clock', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  /** A member record as another process writes it: raw store writes, so a test can delete and create under one key. */
  const record = (payload: number): LeaseRecord => ({
    holderIdentity: 'w1',
    leaseDurationSeconds: 20,
    acquireTime: formatMicroTime(h.clock.wallNow()),
    renewTime: formatMicroTime(h.clock.wallNow()),
    leaseTransitions: 1,
    payload: { n: payload },
  });

  it('every announce is a new incarnation, and the handle, events and members() name the same one', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const b = await h.registry('b', timing);
    const events: MemberEvent[] = [];
    b.registry.watchMembers('worker', (e) => events.push(e));
    const first = await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    await h.clock.advance(0);
    const i1 = first.incarnation!;
    expect(i1).toMatch(/^\d+$/);
    expect((await b.registry.members('worker')).map((m) => m.incarnation)).toEqual([i1]);
    await h.clock.advance(10_000); // heartbeats keep the incarnation
    expect(first.incarnation).toBe(i1);
    await first.update({ n: 2 });
    await h.clock.advance(0);
    await first.withdraw();
    const second = await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 3 } });
    await h.clock.advance(0);
    const i2 = second.incarnation!;
    expect(BigInt(i2)).toBeGreaterThan(BigInt(i1)); // memory orders creates
    expect(log(events)).toEqual([`added w1@${i1}`, `updated w1@${i1}`, `removed w1@${i1} deleted`, `added w1@${i2}`]);
    expect(events[1]).toMatchObject({ previous: { incarnation: i1 } });
    expect((await b.registry.members('worker')).map((m) => m.incarnation)).toEqual([i2]);
  });

  it('a record created again under the same key is removed then added, never updated', async () => {
    h = new Harness();
    const { events, raw } = await h.readerAndRawStore('b', 'worker', timing);
    const one = await raw.create(KEY, record(1));
    await h.clock.advance(0);
    await raw.delete(KEY, one.version);
    const two = await raw.create(KEY, record(2));
    await h.clock.advance(0);
    expect(two.created).not.toBe(one.created);
    expect(log(events)).toEqual([`added w1@${one.created}`, `removed w1@${one.created} deleted`, `added w1@${two.created}`]);
    await raw.close();
  });

  it('a delete and a create coalesced in a watch come out as removed (replaced) then added', async () => {
    h = new Harness();
    const { registry: b, store } = await h.registry('b', timing, h.clock, new CoalescingStore({ backend: h.backend, cluster: 'test' }));
    const events: MemberEvent[] = [];
    b.watchMembers('worker', (e) => events.push(e));
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    const one = await raw.create(KEY, record(1));
    await h.clock.advance(0);
    store.coalescing = true;
    await raw.delete(KEY, one.version);
    const two = await raw.create(KEY, record(1)); // the same payload: without the rule, not even an updated
    await h.clock.advance(0);
    expect(log(events)).toEqual([`added w1@${one.created}`, `removed w1@${one.created} replaced`, `added w1@${two.created}`]);
    expect((await b.members('worker')).map((m) => m.incarnation)).toEqual([two.created]);
    // Within the new incarnation a payload change is an updated again.
    await raw.update(KEY, record(5), two.version);
    await h.clock.advance(0);
    expect(log(events).slice(3)).toEqual([`updated w1@${two.created}`]);
    await raw.close();
  });

  it('a delete and a create coalesced in a relist come out as removed (replaced) then added', async () => {
    h = new Harness();
    const backend = new MemoryBackend({ historyLimit: 1 }); // the reader cannot resume past both changes: it relists
    const { registry: b, store } = await h.registry('b', timing, h.clock, new MemoryStore({ backend, cluster: 'test' }));
    const events: MemberEvent[] = [];
    b.watchMembers('worker', (e) => events.push(e));
    const raw = new MemoryStore({ backend, cluster: 'test' });
    const one = await raw.create(KEY, record(1));
    await h.clock.advance(0);
    store.partition(); // the reader's watch ends
    await raw.delete(KEY, one.version);
    const two = await raw.create(KEY, record(1));
    store.heal();
    await h.clock.advance(5_000); // its retry finds the revision compacted and relists: one snapshot, the delete never seen
    expect(log(events)).toEqual([`added w1@${one.created}`, `removed w1@${one.created} replaced`, `added w1@${two.created}`]);
    await raw.close();
  });

  it('an unmarked version of an incarnation seen after its withdraw mark (a migrate\'s other side, a relist racing the mark) is an older view: never added again', async () => {
    h = new Harness();
    const { events, raw } = await h.readerAndRawStore('b', 'worker', timing);
    const one = await raw.create(KEY, record(1));
    await h.clock.advance(0);
    const marked = await raw.update(KEY, { ...record(1), withdrawn: true }, one.version);
    await h.clock.advance(0);
    const stale = await raw.update(KEY, record(1), marked.version); // the same incarnation, unmarked again
    await h.clock.advance(0);
    expect(stale.created).toBe(one.created);
    await raw.delete(KEY, stale.version);
    const two = await raw.create(KEY, record(2));
    await h.clock.advance(0);
    expect(log(events)).toEqual([`added w1@${one.created}`, `removed w1@${one.created} deleted`, `added w1@${two.created}`]);
    await raw.close();
  });

  it("a peer's expiry mark keeps the incarnation: removed … expired names the one that died", async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const b = await h.registry('b', timing);
    // c sees the mark itself: its watch drops the marker's delete.
    const { registry: c, store: cStore } = await h.registry('c', { ...timing, readOnly: true }, h.clock, new CoalescingStore({ backend: h.backend, cluster: 'test' }));
    const seenByB: MemberEvent[] = [];
    const seenByC: MemberEvent[] = [];
    b.registry.watchMembers('worker', (e) => seenByB.push(e));
    c.watchMembers('worker', (e) => seenByC.push(e));
    const member = await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    await h.clock.advance(0);
    const i1 = member.incarnation!;
    cStore.coalescing = true;
    a.store.partition();
    await h.clock.advance(25_000); // b judges it expired, marks and deletes it
    expect(log(seenByB)).toEqual([`added w1@${i1}`, `removed w1@${i1} expired`]);
    expect(log(seenByC)).toEqual([`added w1@${i1}`, `removed w1@${i1} expired`]);
  });

  it('a member replaced while the reader confirms its expiry is removed as expired, naming the old incarnation', async () => {
    h = new Harness();
    const { registry: b, store } = await h.registry('b', { ...timing, readOnly: true }, h.clock, new CoalescingStore({ backend: h.backend, cluster: 'test' }));
    const events: MemberEvent[] = [];
    b.watchMembers('worker', (e) => events.push(e));
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    const one = await raw.create(KEY, record(1));
    await h.clock.advance(0);
    store.coalescing = true;
    store.holdReads();
    await h.clock.advance(20_000); // run out by b's clock: its confirming read waits
    expect(store.heldReads).toBe(1);
    await raw.delete(KEY, one.version);
    const two = await raw.create(KEY, record(2));
    await h.clock.advance(0);
    expect(log(events)).toEqual([`added w1@${one.created}`, `removed w1@${one.created} expired`, `added w1@${two.created}`]);
    store.releaseReads(); // the answer about the replaced record changes nothing
    await h.clock.advance(0);
    expect(log(events)).toHaveLength(3);
    expect((await b.members('worker')).map((m) => m.incarnation)).toEqual([two.created]);
    await raw.close();
  });

  it('a registry of its own sees its own member under the incarnation its handle names', async () => {
    h = new Harness();
    const registry = await createRegistry({ type: 'memory', identity: 'solo', ...timing }, { store: new MemoryStore({ backend: h.backend, cluster: 'test' }), clock: h.clock });
    const member = await registry.announce({ role: 'worker', id: 'w1' });
    expect((await registry.members('worker'))[0]!.incarnation).toBe(member.incarnation);
    await registry.close();
  });
});
