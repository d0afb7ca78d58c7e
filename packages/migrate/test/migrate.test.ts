import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type Leadership, type MemberEvent, type Registry } from '@rollcall/core';
import { formatMicroTime } from '@rollcall/core/spi';
import { ManualClock, MemoryBackend, MemoryStore, settle } from '@rollcall/core/testing';
import { MigrateStore } from '../src/index.js';

type Phase = 'from' | 'migrate' | 'to';

/** Two memory backends and one manual clock: processes on `from`, on `to`, or migrating between them. */
class Migration {
  readonly clock = new ManualClock();
  readonly from = new MemoryBackend();
  readonly to = new MemoryBackend();
  private readonly opened: Registry[] = [];

  side(phase: 'from' | 'to'): MemoryStore {
    return new MemoryStore({ backend: this[phase], cluster: 'test' });
  }

  async process(identity: string, phase: Phase): Promise<{ registry: Registry; from?: MemoryStore; to?: MemoryStore }> {
    const from = phase === 'to' ? undefined : this.side('from');
    const to = phase === 'from' ? undefined : this.side('to');
    const store = from && to ? new MigrateStore(from, to, { clock: this.clock }) : (from ?? to)!;
    const registry = await createRegistry({ type: store.backend, identity }, { store, clock: this.clock });
    this.opened.push(registry);
    return { registry, from, to };
  }

  /** The record of `key` on one side, as stored. */
  record(phase: 'from' | 'to', key: string) {
    return this[phase].rows.get(`test/${key}`)?.record;
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled(this.opened.map((r) => r.close()));
  }
}

/** Advances in steps of `stepMs`, failing at once if two of `campaigns` lead at one step. */
async function advanceOneLeader(m: Migration, campaigns: () => Leadership[], ms: number, stepMs = 100): Promise<void> {
  for (let t = 0; t < ms; t += stepMs) {
    await m.clock.advance(stepMs);
    const leaders = campaigns().filter((c) => c.isLeader);
    expect(leaders.map((c) => c.identity), `leaders at ${m.clock.now()} ms`).toHaveLength(Math.min(leaders.length, 1));
  }
}

describe('registry.type=migrate on the injected clock', () => {
  let m: Migration;
  afterEach(async () => m.closeAll());

  for (const [left, right, side] of [
    ['from', 'migrate', 'from'],
    ['migrate', 'to', 'to'],
  ] as const) {
    it(`a ${left} process and a ${right} process contend on ${side}: one leads, the other takes over only after its lease, with a larger token`, async () => {
      m = new Migration();
      const a = await m.process('a', left);
      const b = await m.process('b', right);
      const la = a.registry.campaign('scheduler');
      await m.clock.advance(0);
      expect(la.isLeader).toBe(true);
      const lb = b.registry.campaign('scheduler');
      await advanceOneLeader(m, () => [la, lb], 30_000);
      expect(la.isLeader).toBe(true);
      expect(lb.isLeader).toBe(false);
      const tokenA = la.fencingToken!;
      // a's connection to the contended side goes: it steps down at its deadline, b takes over after the lease.
      (a[side] as MemoryStore).partition();
      const cutAt = m.clock.now();
      await advanceOneLeader(m, () => [la, lb], 20_000);
      expect(la.isLeader).toBe(false);
      expect(lb.isLeader).toBe(true);
      expect(lb.fencingToken!).toBeGreaterThan(tokenA);
      expect(m.record(side, 'election/scheduler')?.holderIdentity).toBe('b');
      expect(m.clock.now() - cutAt).toBeGreaterThanOrEqual(15_000 - 2_000);
    });
  }

  for (const side of ['from', 'to'] as const) {
    it(`a migrating leader that cannot reach ${side} steps down at its renew deadline, though the other side still answers`, async () => {
      m = new Migration();
      const a = await m.process('a', 'migrate');
      const la = a.registry.campaign('scheduler');
      const lost: string[] = [];
      la.on('lost', (e) => lost.push(e.reason));
      await m.clock.advance(4_500);
      expect(la.isLeader).toBe(true);
      a[side]!.partition();
      await m.clock.advance(9_499); // the last full renew was sent at 4000
      expect(la.isLeader).toBe(true);
      await m.clock.advance(1);
      expect(la.isLeader).toBe(false);
      expect(lost).toEqual(['renew-deadline']);
    });
  }

  it('a migrating leader cut off from to stops writing from too, so another migrating process takes over after one lease', async () => {
    m = new Migration();
    const a = await m.process('a', 'migrate');
    const b = await m.process('b', 'migrate');
    const la = a.registry.campaign('scheduler');
    await m.clock.advance(0);
    const lb = b.registry.campaign('scheduler');
    await m.clock.advance(4_500);
    expect(la.isLeader).toBe(true);
    a.to!.refusing = true;
    const cutAt = m.clock.now();
    let fromWrites = 0;
    const off = m.from.subscribe((change) => change.path === 'test/election/scheduler' && change.row?.record.holderIdentity === 'a' && m.clock.now() > cutAt + 2_000 && fromWrites++);
    await advanceOneLeader(m, () => [la, lb], 30_000);
    off();
    expect(la.isLeader).toBe(false);
    expect(lb.isLeader).toBe(true);
    // After its first failed write to to, a writes nothing more on from: its half there runs out.
    expect(fromWrites).toBe(0);
  });

  it('a rolling restart from → migrate → to, one process at a time, never has two leaders and never lowers a token', async () => {
    m = new Migration();
    const phases: Phase[] = ['from', 'migrate', 'to'];
    const names = ['p0', 'p1', 'p2'];
    const running = new Map<string, { registry: Registry; leadership: Leadership }>();
    const tokens: number[] = [];
    const start = async (name: string, phase: Phase) => {
      const { registry } = await m.process(`${name}-${phase}`, phase);
      const leadership = registry.campaign('scheduler');
      leadership.on('elected', (e) => tokens.push(e.fencingToken));
      running.set(name, { registry, leadership });
    };
    for (const name of names) await start(name, 'from');
    const campaigns = () => [...running.values()].map((r) => r.leadership);
    await advanceOneLeader(m, campaigns, 5_000);
    for (const phase of phases.slice(1)) {
      for (const name of names) {
        // The leader first, as a rolling restart may: its successor is elected through the watch.
        await running.get(name)!.registry.close();
        running.delete(name);
        await advanceOneLeader(m, campaigns, 3_000);
        await start(name, phase);
        await advanceOneLeader(m, campaigns, 5_000);
      }
    }
    await advanceOneLeader(m, campaigns, 20_000);
    expect(campaigns().filter((c) => c.isLeader)).toHaveLength(1);
    expect(tokens.length).toBeGreaterThanOrEqual(3);
    expect(tokens).toEqual([...tokens].sort((x, y) => x - y));
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(m.record('to', 'election/scheduler')!.leaseTransitions).toBe(tokens[tokens.length - 1]);
  });

  it('the token continues above the higher side: to written by a later term (a rollback) wins over from', async () => {
    m = new Migration();
    const f = await m.process('f', 'from');
    const lf = f.registry.campaign('scheduler');
    await m.clock.advance(0);
    await lf.resign();
    await m.clock.advance(100);
    expect(m.record('from', 'election/scheduler')!.leaseTransitions).toBe(1);
    // Phase 3 ran a while (three terms on to), then a rollback to phase 2.
    for (const name of ['t1', 't2', 't3']) {
      const t = await m.process(name, 'to');
      const lt = t.registry.campaign('scheduler');
      expect(await m.clock.advanceUntil(() => lt.isLeader, 5_000, 10)).toBe(true);
      await t.registry.close();
    }
    const toToken = m.record('to', 'election/scheduler')!.leaseTransitions;
    expect(toToken).toBe(3);
    const a = await m.process('a', 'migrate');
    const la = a.registry.campaign('scheduler');
    await m.clock.advanceUntil(() => la.isLeader, 20_000, 10);
    expect(la.fencingToken).toBe(toToken + 1);
    expect(m.record('from', 'election/scheduler')!.leaseTransitions).toBe(toToken + 1);
    expect(m.record('to', 'election/scheduler')!.leaseTransitions).toBe(toToken + 1);
  });

  for (const [fromToken, toToken] of [
    [5, 2],
    [2, 5],
  ] as const) {
    it(`a migrating holder's token continues above both sides (from at ${fromToken}, to at ${toToken}), on both sides`, async () => {
      m = new Migration();
      const free = (leaseTransitions: number) => ({ holderIdentity: '', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions });
      await m.side('from').create('election/scheduler', free(fromToken));
      await m.side('to').create('election/scheduler', free(toToken));
      const a = await m.process('a', 'migrate');
      const la = a.registry.campaign('scheduler');
      await m.clock.advance(0);
      expect(la.fencingToken).toBe(6);
      expect(m.record('from', 'election/scheduler')!.leaseTransitions).toBe(6);
      expect(m.record('to', 'election/scheduler')!.leaseTransitions).toBe(6);
    });
  }

  it('a migrating candidate between a live holder on from and another on to (phases mixed) takes neither', async () => {
    m = new Migration();
    const f = await m.process('f', 'from');
    const t = await m.process('t', 'to');
    const lf = f.registry.campaign('scheduler');
    const lt = t.registry.campaign('scheduler');
    await m.clock.advance(0);
    const a = await m.process('a', 'migrate');
    const la = a.registry.campaign('scheduler');
    for (let i = 0; i < 300; i++) {
      await m.clock.advance(100);
      expect([lf.isLeader, lt.isLeader, la.isLeader]).toEqual([true, true, false]);
    }
    expect(m.record('from', 'election/scheduler')!.holderIdentity).toBe('f');
    expect(m.record('to', 'election/scheduler')!.holderIdentity).toBe('t');
  });

  it('a watch listed between the two halves of another process\'s write shows the second half at once, not after holding its view blind', async () => {
    m = new Migration();
    const lease = (holderIdentity: string) => ({ holderIdentity, leaseDurationSeconds: 2, acquireTime: formatMicroTime(new Date(0)), renewTime: formatMicroTime(new Date(0)), leaseTransitions: 1 });
    const writer = new MigrateStore(m.side('from'), m.side('to'), { clock: m.clock });
    await writer.create('election/e', lease('a'));
    const from = m.side('from');
    await from.update('election/e', lease(''), (await from.get('election/e'))!.version);
    const reader = new MigrateStore(m.side('from'), m.side('to'), { clock: m.clock });
    const list = await reader.list('election/');
    expect(list.records.map((r) => r.record.holderIdentity)).toEqual(['a']);
    const seen: string[] = [];
    const errors: unknown[] = [];
    const watch = reader.watch('election/', list.revision, { event: (e) => void (e.type === 'put' && seen.push(e.record.record.holderIdentity)), error: (err) => void errors.push(err) });
    const to = m.side('to');
    await to.update('election/e', lease(''), (await to.get('election/e'))!.version);
    // No time passes: both memory sides say they are synced, so nothing waits out holdMs (a candidate would judge a's lease expired meanwhile).
    for (let round = 0; round < 100 && seen.length === 0; round++) await settle(1);
    watch.close();
    expect(seen).toEqual(['']);
    expect(errors).toEqual([]);
    await Promise.all([writer.close(), reader.close()]);
  });

  it('locks too: a from-only holder keeps a migrating waiter out, and the migrating holder writes its token on both sides', async () => {
    m = new Migration();
    const f = await m.process('f', 'from');
    const a = await m.process('a', 'migrate');
    const held = await f.registry.lock('jobs');
    const waiting = a.registry.lock('jobs');
    let got = false;
    void waiting.then(() => (got = true));
    await m.clock.advance(30_000);
    expect(got).toBe(false);
    await held.release();
    await m.clock.advance(100);
    const mine = await waiting;
    expect(mine.fencingToken).toBe(held.fencingToken + 1);
    expect(m.record('to', 'lock/jobs')).toMatchObject({ holderIdentity: expect.stringMatching(/^a\./), leaseTransitions: mine.fencingToken });
    expect(m.record('from', 'lock/jobs')).toMatchObject({ holderIdentity: expect.stringMatching(/^a\./), leaseTransitions: mine.fencingToken });
  });

  describe('members', () => {
    it('a migrating member is announced on both sides, and each side sees it', async () => {
      m = new Migration();
      const f = await m.process('f', 'from');
      const t = await m.process('t', 'to');
      const a = await m.process('a', 'migrate');
      await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
      await m.clock.advance(0);
      expect(m.record('from', 'member/worker/w1')?.payload).toEqual({ n: 1 });
      expect(m.record('to', 'member/worker/w1')?.payload).toEqual({ n: 1 });
      expect((await f.registry.members('worker')).map((x) => x.id)).toEqual(['w1']);
      expect((await t.registry.members('worker')).map((x) => x.id)).toEqual(['w1']);
    });

    it('a migrating observer sees one added per member (from only, to only, or both), and removed only once gone from both', async () => {
      m = new Migration();
      const observer = await m.process('o', 'migrate');
      const events: string[] = [];
      observer.registry.watchMembers('worker', (e: MemberEvent) => events.push(`${e.type} ${e.member.id}`));
      const f = await m.process('f', 'from');
      const t = await m.process('t', 'to');
      const a = await m.process('a', 'migrate');
      const onFrom = await f.registry.announce({ role: 'worker', id: 'on-from' });
      await t.registry.announce({ role: 'worker', id: 'on-to' });
      await a.registry.announce({ role: 'worker', id: 'on-both' });
      await m.clock.advance(0);
      expect((await observer.registry.members('worker')).map((x) => x.id)).toEqual(['on-both', 'on-from', 'on-to']);
      // The from side of the member on both goes (a from-only peer expired it): still a member.
      const fromSide = m.side('from');
      await fromSide.delete('member/worker/on-both', (await fromSide.get('member/worker/on-both'))!.version);
      await onFrom.withdraw();
      await m.clock.advance(0);
      expect(events.sort()).toEqual(['added on-both', 'added on-from', 'added on-to', 'removed on-from']);
      // Its process stops: gone from to as well, after its lease, and reported once.
      await a.registry.close();
      await m.clock.advance(60_000);
      expect(events.filter((e) => e.endsWith('on-both'))).toEqual(['added on-both', 'removed on-both']);
      expect(m.record('from', 'member/worker/on-both')).toBeUndefined();
      expect(m.record('to', 'member/worker/on-both')).toBeUndefined();
    });

    it('the payload is the newer record’s, whichever side it is on', async () => {
      m = new Migration();
      const observer = await m.process('o', 'migrate');
      await observer.registry.members('worker'); // watched from here on
      const at = (ms: number) => formatMicroTime(new Date(Date.UTC(2026, 0, 1) + ms));
      const record = (n: number, renewMs: number) => ({ holderIdentity: 'w1', leaseDurationSeconds: 20, acquireTime: at(0), renewTime: at(renewMs), leaseTransitions: 1, payload: { n } });
      const from = m.side('from');
      const to = m.side('to');
      await from.create('member/worker/w1', record(1, 2_000));
      await to.create('member/worker/w1', record(2, 1_000));
      await m.clock.advance(0);
      expect((await observer.registry.members('worker')).map((x) => x.payload)).toEqual([{ n: 1 }]);
      await to.update('member/worker/w1', record(3, 3_000), (await to.get('member/worker/w1'))!.version);
      await m.clock.advance(0);
      expect((await observer.registry.members('worker')).map((x) => x.payload)).toEqual([{ n: 3 }]);
    });
  });

  it('a member keeps one incarnation in a migrating watch across its two-sided announce and withdraw; a new life on one side is removed then added', async () => {
    m = new Migration();
    const { registry: reader } = await m.process('r', 'migrate');
    const events: string[] = [];
    reader.watchMembers('worker', (e: MemberEvent) => events.push(`${e.type} ${e.member.incarnation}${e.type === 'removed' ? ` ${e.reason}` : ''}`));
    await m.clock.advance(2_000); // both sides' watches shown to run
    const from = m.side('from');
    const to = m.side('to');
    const key = 'member/worker/w1';
    let renewed = 0;
    /** The record of one life (one announce): its acquireTime names it; each write renews later. */
    const life = (n: number) => ({ holderIdentity: 'w1', leaseDurationSeconds: 20, acquireTime: formatMicroTime(new Date(n * 1000)), renewTime: formatMicroTime(new Date(10_000 + ++renewed)), leaseTransitions: 1 });
    // A migrating writer's announce and withdraw: from, then to.
    const f1 = await from.create(key, life(1));
    const t1 = await to.create(key, life(1));
    await settle(20);
    await from.delete(key, f1.version);
    await settle(20);
    await to.delete(key, t1.version);
    await settle(20);
    expect(events).toEqual([`added from:${f1.created}`, `removed from:${f1.created} deleted`]);
    // The next life; then `to` runs ahead: its record of a third life beside `from`'s of the second.
    const f2 = await from.create(key, life(2));
    const t2 = await to.create(key, life(2));
    await settle(20);
    await to.delete(key, t2.version);
    const t3 = await to.create(key, life(3));
    await settle(20);
    const f3 = await from.update(key, life(3), f2.version).then(async () => from.get(key));
    await settle(20);
    expect(f3!.created).toBe(f2.created); // an update on from: the creation its side reports is unchanged, the view keeps to's
    expect(events.slice(2)).toEqual([`added from:${f2.created}`, `removed from:${f2.created} replaced`, `added to:${t3.created}`]);
    expect((await reader.members('worker')).map((x) => x.incarnation)).toEqual([`to:${t3.created}`]);
    await from.close();
    await to.close();
  });
});
