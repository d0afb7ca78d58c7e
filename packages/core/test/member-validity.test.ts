import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRegistry, ErrorCode, type Clock, type CoreConfigInput, type MemberHandle, type MemberLostEvent, type Registry, type Timer } from '../src/index.js';
import { markExpired } from '../src/liveness-judge.js';
import { heartbeatKey, memberKey } from '../src/record-key.js';
import type { WatchEvent } from '../src/store.js';
import { ManualClock, MemoryStore } from '../src/testing.js';
import { GatedStore, Harness, memberLog, seeded } from './harness.js';

const INTERVAL = 5_000;
const LEASE = 20_000;
const DEADLINE = 15_000;
const timing = { member: { heartbeatIntervalMs: INTERVAL, leaseDurationMs: LEASE } };
const KEY = memberKey('worker', 'w1');

/** The member's own record as the backend holds it. */
function row(h: Harness, key = KEY) {
  return h.backend.rows.get(`test/${key}`);
}

/** A handle's events, with the clock time each was emitted. */
function handleLog(handle: MemberHandle, clock: Clock) {
  const lost: (MemberLostEvent & { at: number })[] = [];
  const reannounced: { incarnation: string; previous: string; at: number }[] = [];
  handle.on('lost', (e) => lost.push({ ...e, at: clock.now() }));
  handle.on('reannounced', (e) => reannounced.push({ incarnation: e.incarnation, previous: e.previous, at: clock.now() }));
  return { lost, reannounced };
}

/** Every put and delete of `prefix` as the backend orders them. */
async function rawWatch(h: Harness, prefix: string) {
  const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
  const seen: { at: number; event: WatchEvent }[] = [];
  const { revision } = await raw.list(prefix);
  raw.watch(prefix, revision, { event: (event) => void (event.type !== 'progress' && seen.push({ at: h.clock.now(), event })), error: () => {} });
  return seen;
}

const opened: Registry[] = [];

/** A registry on `h`'s backend whose `afterLost: 'exit'` calls `exit` instead of ending the test process. */
async function withExit(h: Harness, identity: string, config: CoreConfigInput, exit: (code: number) => void, clock: Clock = h.clock): Promise<Registry> {
  const registry = await createRegistry({ type: 'memory', identity, ...config }, { store: new MemoryStore({ backend: h.backend, cluster: 'test' }), clock, exit });
  opened.push(registry);
  return registry;
}

describe('a member judged by its own clock, like a leadership', () => {
  let h: Harness;
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((r) => r.close()));
    await h.closeAll();
  });

  it('is lost at the send of its last successful heartbeat plus renewDeadlineMs, not at its receipt; before any peer removes it', async () => {
    h = new Harness();
    const store = new GatedStore({ backend: h.backend, cluster: 'test' });
    const a = await h.registry('a', timing, h.clock, store);
    const peer = memberLog((await h.registry('b', timing)).registry, 'worker', h.clock);
    const handle = await a.registry.announce({ role: 'worker', id: 'w1' });
    const log = handleLog(handle, h.clock);
    await h.clock.advance(INTERVAL - 1);
    store.hold(); // the heartbeat sent at 5000 lands, its reply is held
    await h.clock.advance(2_001);
    expect(h.clock.now()).toBe(7_000);
    store.partition();
    store.open(); // the reply arrives at 7000: the deadline counts from 5000
    await h.clock.advance(0);
    expect(handle.alive).toBe(true);
    await h.clock.advance(INTERVAL + DEADLINE - 7_000 - 1);
    expect(handle.alive).toBe(true);
    expect(log.lost).toEqual([]);
    await h.clock.advance(1);
    expect(handle.alive).toBe(false);
    expect(log.lost).toMatchObject([{ reason: 'renew-deadline', role: 'worker', id: 'w1', at: INTERVAL + DEADLINE }]);
    expect(handle.signal.aborted).toBe(true);
    expect(handle.signal.reason).toMatchObject({ code: ErrorCode.LEASE_LOST, reason: 'renew-deadline' });
    await h.clock.advanceUntil(() => peer.events.length === 2, LEASE);
    expect(peer.summary()).toEqual(['added w1', 'removed w1 expired']);
    expect(peer.at[1]).toBeGreaterThanOrEqual(INTERVAL + LEASE);
    expect(log.lost[0]!.at).toBeLessThan(peer.at[1]!);
  });

  it('an update while the lost member is being announced again is refused LEASE_LOST (reannouncing), and the new incarnation carries its payload', async () => {
    h = new Harness();
    const store = new GatedStore({ backend: h.backend, cluster: 'test' });
    const a = await h.registry('a', timing, h.clock, store);
    const handle = await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    const log = handleLog(handle, h.clock);
    store.partition(); // cut off past its deadline: lost, and the re-announce cannot land yet
    await h.clock.advance(INTERVAL + DEADLINE);
    expect(log.lost).toHaveLength(1);
    expect(log.reannounced).toEqual([]);
    const refused = await handle.update({ n: 2 }).then(
      () => undefined,
      (err: Error & { code?: string; reason?: string }) => err,
    );
    expect(refused).toMatchObject({ code: ErrorCode.LEASE_LOST, reason: 'reannouncing' });
    store.heal();
    await h.clock.advanceUntil(() => log.reannounced.length === 1, LEASE);
    expect(row(h)?.record.payload).toEqual({ n: 2 });
    expect(handle.alive).toBe(true);
  });

  it('a process resumed from a pause reads alive false before its timer fires, and its overdue heartbeat writes nothing', async () => {
    h = new Harness();
    const a = await withExit(h, 'a', { ...timing, member: { ...timing.member, afterLost: 'exit' } }, () => {});
    const handle = await a.announce({ role: 'worker', id: 'w1' });
    const log = handleLog(handle, h.clock);
    await h.clock.advance(INTERVAL); // renewed, sent at 5000
    const written = row(h)!.version;
    h.clock.jump(DEADLINE); // paused: no timer has run
    expect(handle.alive).toBe(false);
    expect(log.lost).toEqual([]); // the timer only announces
    await h.clock.advance(0); // the overdue heartbeat timer fires first
    expect(log.lost).toMatchObject([{ reason: 'renew-deadline' }]);
    expect(row(h)!.version).toBe(written);
  });

  it('a heartbeat that finds its record gone is lost (deleted) and never writes it again; exit calls the hook once', async () => {
    h = new Harness();
    const exits: number[] = [];
    const a = await withExit(h, 'a', { ...timing, member: { ...timing.member, afterLost: 'exit' } }, (code) => exits.push(code));
    const handle = await a.announce({ role: 'worker', id: 'w1' });
    const log = handleLog(handle, h.clock);
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    await raw.delete(KEY, (await raw.get(KEY))!.version); // an operator deletes it
    await h.clock.advance(INTERVAL);
    expect(log.lost).toMatchObject([{ reason: 'deleted', at: INTERVAL }]);
    expect(handle.alive).toBe(false);
    expect(exits).toEqual([75]);
    await h.clock.advance(3 * LEASE);
    expect(row(h)).toBeUndefined(); // never re-created
    expect(exits).toEqual([75]);
    await expect(handle.update({ n: 2 })).rejects.toMatchObject({ code: ErrorCode.LEASE_LOST });
  });

  it("a heartbeat that finds a peer's expiry mark on its record is lost (taken) and re-announces a new record: peers see removed, then added", async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const peer = memberLog((await h.registry('b', timing)).registry, 'worker', h.clock);
    const handle = await a.registry.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    const log = handleLog(handle, h.clock);
    const first = handle.incarnation!;
    const firstSignal = handle.signal;
    expect(first).toBe(String(row(h)!.createRevision));
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    const stored = (await raw.get(KEY))!;
    await raw.update(KEY, markExpired(stored.record, h.clock.wallNow()), stored.version); // a peer's mark, its delete still to come
    const puts = await rawWatch(h, 'member/');
    await h.clock.advance(INTERVAL);
    expect(log.lost).toMatchObject([{ reason: 'taken', incarnation: first, at: INTERVAL }]);
    expect(firstSignal.aborted).toBe(true);
    expect(log.reannounced).toHaveLength(1);
    const second = log.reannounced[0]!;
    expect(second).toMatchObject({ previous: first, at: INTERVAL });
    expect(second.incarnation).not.toBe(first);
    expect(handle.incarnation).toBe(second.incarnation);
    expect(handle.alive).toBe(true);
    expect(handle.signal.aborted).toBe(false);
    expect(String(row(h)!.createRevision)).toBe(second.incarnation);
    expect(row(h)!.record.payload).toEqual({ n: 1 });
    // The old record was never written by its member after the mark: deleted, then a new one created.
    expect(puts.map(({ event }) => (event.type === 'put' ? `put ${event.record.created} ${event.record.record.holderIdentity}` : event.type))).toEqual(['delete', `put ${second.incarnation} w1`]);
    await h.clock.advance(0);
    expect(peer.summary()).toEqual(['added w1', 'removed w1 expired', 'added w1']);
    // Heartbeats go on in the new incarnation.
    await h.clock.advance(3 * LEASE);
    expect(handle.alive).toBe(true);
    expect(log.lost).toHaveLength(1);
    expect(peer.events).toHaveLength(3);
  });

  it('a successor announced under the same id (a rolling update) supersedes the member: it is lost, never announced again, and the successor stays', async () => {
    h = new Harness();
    const a = await h.registry('a', timing);
    const peer = memberLog((await h.registry('p', timing)).registry, 'worker', h.clock);
    const old = await a.registry.announce({ role: 'worker', id: 'w1', payload: { generation: 1 } });
    const log = handleLog(old, h.clock);
    await h.clock.advance(1_000);
    const b = await h.registry('b', timing);
    const successor = await b.registry.announce({ role: 'worker', id: 'w1', payload: { generation: 2 } });
    await h.clock.advance(0);
    // The earlier incarnation's record was removed (marked, then deleted) before the successor's was created.
    expect(peer.summary()).toEqual(['added w1', 'removed w1 expired', 'added w1']);
    await h.clock.advance(INTERVAL); // the old process's next heartbeat finds the successor's record
    expect(log.lost).toMatchObject([{ reason: 'superseded' }]);
    expect(old.alive).toBe(false);
    await h.clock.advance(3 * LEASE);
    expect(log.reannounced).toEqual([]);
    expect(successor.alive).toBe(true);
    expect(String(row(h)!.createRevision)).toBe(successor.incarnation);
    expect(row(h)!.record.payload).toEqual({ generation: 2 });
    expect(peer.events).toHaveLength(3);
    // Its withdraw deletes only a record of its own: the successor's stays.
    await old.withdraw();
    await h.clock.advance(0);
    expect(String(row(h)!.createRevision)).toBe(successor.incarnation);
    expect(peer.events).toHaveLength(3);
  });

  it('reaper mode: a heartbeat that finds its heartbeat record gone (the reaper expired it) is lost, and its reaper saw it lost first when only cut off', async () => {
    h = new Harness();
    const mode = { member: { ...timing.member, liveness: 'reaper' as const } };
    const a = await h.registry('a', mode);
    const reaper = memberLog((await h.registry('r', mode)).registry, 'worker', h.clock);
    const handle = await a.registry.announce({ role: 'worker', id: 'w1' });
    const log = handleLog(handle, h.clock);
    await h.clock.advance(INTERVAL);
    const first = handle.incarnation!;
    // Cut off: lost by its own clock at 5000 + deadline, removed by the reaper a lease after it saw the heartbeat.
    a.store.partition();
    await h.clock.advanceUntil(() => reaper.events.length === 2, 2 * LEASE);
    expect(reaper.summary()).toEqual(['added w1', 'removed w1 expired']);
    expect(log.lost).toMatchObject([{ reason: 'renew-deadline', incarnation: first, at: INTERVAL + DEADLINE }]);
    expect(log.lost[0]!.at).toBeLessThan(reaper.at[1]!);
    a.store.heal();
    await h.clock.advanceUntil(() => reaper.events.length === 3, 2 * INTERVAL);
    expect(reaper.summary()).toEqual(['added w1', 'removed w1 expired', 'added w1']);
    expect(handle.incarnation).not.toBe(first);
    // An operator deletes the heartbeat record of the new incarnation: its next heartbeat is lost, `deleted`.
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    const beat = heartbeatKey('worker', 'w1');
    await raw.delete(beat, (await raw.get(beat))!.version);
    await h.clock.advanceUntil(() => log.lost.length === 2, INTERVAL);
    await h.clock.advance(0);
    expect(log.lost.map((l) => l.reason)).toEqual(['renew-deadline', 'deleted']);
    expect(log.reannounced).toHaveLength(2);
    expect(row(h, beat)).toBeDefined(); // the new incarnation's, created anew
    expect(handle.alive).toBe(true);
  });
});

/** A clock for one process that can be paused: time goes on, but its timers run only once it resumes (SIGSTOP, a long GC pause). */
class PausableClock implements Clock {
  paused = false;
  private held: (() => void)[] = [];
  constructor(private readonly base: ManualClock) {}
  now(): number {
    return this.base.now();
  }
  wallNow(): Date {
    return this.base.wallNow();
  }
  setTimeout(fn: () => void, delayMs: number): Timer {
    let cancelled = false;
    const run = () => void (cancelled || fn());
    const timer = this.base.setTimeout(() => (this.paused ? this.held.push(run) : run()), delayMs);
    return {
      cancel: () => {
        cancelled = true;
        timer.cancel();
      },
    };
  }
  resume(): void {
    this.paused = false;
    for (const run of this.held.splice(0)) run();
  }
}

/** A memory store whose replies can be held: what was sent is applied, but replies reach the process only once released (a paused process, a slow network). */
class HoldingStore extends MemoryStore {
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;
  hold(): void {
    this.gate ??= new Promise((resolve) => (this.openGate = resolve));
  }
  release(): void {
    this.openGate?.();
    this.gate = this.openGate = undefined;
  }
  private async held<T>(call: () => Promise<T>): Promise<T> {
    let result: { ok: true; value: T } | { ok: false; err: unknown };
    try {
      result = { ok: true, value: await call() };
    } catch (err) {
      result = { ok: false, err };
    }
    await this.gate;
    if (!result.ok) throw result.err;
    return result.value;
  }
  override create(...args: Parameters<MemoryStore['create']>): ReturnType<MemoryStore['create']> {
    return this.held(() => super.create(...args));
  }
  override update(...args: Parameters<MemoryStore['update']>): ReturnType<MemoryStore['update']> {
    return this.held(() => super.update(...args));
  }
  override delete(...args: Parameters<MemoryStore['delete']>): ReturnType<MemoryStore['delete']> {
    return this.held(() => super.delete(...args));
  }
  override get(...args: Parameters<MemoryStore['get']>): ReturnType<MemoryStore['get']> {
    return this.held(() => super.get(...args));
  }
  override list(...args: Parameters<MemoryStore['list']>): ReturnType<MemoryStore['list']> {
    return this.held(() => super.list(...args));
  }
}


describe('lost precedes every peer removal, and a lost incarnation never comes back (seeded model)', () => {
  const SEEDS = Number(process.env.MODEL_SEEDS ?? 150);
  const STEPS = 30;

  for (const mode of ['heartbeat', 'reaper'] as const) {
    it(`${mode} mode: ${SEEDS} seeds of random pauses and cuts of the member against a peer on one memory store`, async () => {
      const only = Number(process.env.MODEL_SEED ?? 0);
      for (let seed = only || 1; seed <= (only || SEEDS); seed++) {
        const trace = (s: string) => void (process.env.MODEL_SEED && process.stderr.write(`${h.clock.now()} ${s}\n`));
        const h = new Harness();
        const random = seeded(seed * 7919 + (mode === 'reaper' ? 1 : 0));
        // Jitter (backoff, retry periods) from the seed too, so a failing seed replays.
        const jitter = seeded(seed);
        vi.spyOn(Math, 'random').mockImplementation(jitter);
        const config = { member: { ...timing.member, liveness: mode } };
        const clock = new PausableClock(h.clock);
        const store = new HoldingStore({ backend: h.backend, cluster: 'test' });
        const m = await h.registry('m', config, clock, store);
        const p = await h.registry('p', config);
        const violations: string[] = [];
        const context = () => `seed ${seed} at ${h.clock.now()}`;
        const handle = await m.registry.announce({ role: 'worker', id: 'w1', payload: 0 });
        const lostAt = new Map<string, number>();
        // The incarnations the member knew it had; a create whose reply it never had (timed out while paused) it never acted as.
        const known = new Set([handle.incarnation!]);
        const unknownRemoved = new Set<string>();
        handle.on('reannounced', (e) => {
          trace(`reannounced ${e.incarnation}`);
          if (unknownRemoved.has(e.incarnation)) violations.push(`${context()}: incarnation ${e.incarnation} announced after a peer removed it`);
          known.add(e.incarnation);
        });
        handle.on('lost', (e) => {
          trace(`lost ${e.incarnation} ${e.reason}`);
          if (lostAt.has(e.incarnation)) violations.push(`${context()}: incarnation ${e.incarnation} lost twice`);
          lostAt.set(e.incarnation, h.clock.now());
        });
        // What the peer added and removed, by incarnation (the record's creation the backend holds as the peer hears of it).
        const added: string[] = [];
        let shown: string | undefined;
        p.registry.watchMembers('worker', (e) => {
          trace(`peer ${e.type} ${e.type === 'removed' ? e.reason : ''} row ${row(h)?.createRevision} ${row(h)?.record.holderIdentity}`);
          if (e.type === 'added') {
            const created = row(h) ? String(row(h)!.createRevision) : undefined;
            if (created === undefined) return void violations.push(`${context()}: added with no record`);
            if (added.includes(created)) violations.push(`${context()}: incarnation ${created} added again`);
            if (lostAt.has(created)) violations.push(`${context()}: incarnation ${created} added after its member lost it`);
            added.push(created);
            shown = created;
          } else if (e.type === 'removed') {
            const removed = shown!;
            shown = undefined;
            if (handle.incarnation === removed && handle.alive) violations.push(`${context()}: incarnation ${removed} removed (${e.reason}) while its member reads alive`);
            // A member that runs has announced its loss by then; a paused one cannot, and reads it the moment it resumes.
            if (!known.has(removed)) unknownRemoved.add(removed);
            else if (!clock.paused && !lostAt.has(removed)) violations.push(`${context()}: incarnation ${removed} removed (${e.reason}) before its member's lost`);
          }
        });
        // After its loss, an incarnation's record is only ever marked or deleted, never renewed.
        const puts = await rawWatch(h, 'member/');
        if (process.env.MODEL_SEED) {
          const all = new MemoryStore({ backend: h.backend, cluster: 'test' });
          all.watch('', (await all.list('')).revision, { event: (e) => trace(`raw ${e.type} ${e.type === 'put' ? `${e.record.key} ${e.record.created} ${e.record.record.holderIdentity}` : e.type === 'delete' ? e.key : ''}`), error: () => {} });
        }
        let cut = false;
        let lagging = false;
        const replies = () => (clock.paused || lagging ? store.hold() : store.release());
        for (let step = 0; step < STEPS; step++) {
          const r = random();
          trace(`step ${r.toFixed(2)} cut=${cut} paused=${clock.paused} lagging=${lagging} alive=${handle.alive}`);
          if (r < 0.45) await h.clock.advance(Math.floor(random() * 8_000));
          else if (r < 0.6) {
            cut = !cut;
            if (cut) store.partition();
            else store.heal();
          } else if (r < 0.7) {
            if (clock.paused) clock.resume();
            else clock.paused = true;
            replies();
          } else if (r < 0.78) {
            lagging = !lagging; // replies held while the process runs
            replies();
          } else if (r < 0.85 && !clock.paused) {
            handle.update(step).catch(() => {});
          } else await h.clock.advance(Math.floor(random() * 30_000));
        }
        clock.resume();
        store.release();
        store.heal();
        await h.clock.advance(3 * LEASE);
        for (const { at, event } of puts) {
          if (event.type !== 'put') continue;
          const lost = lostAt.get(event.record.created);
          if (lost !== undefined && at > lost && event.record.record.holderIdentity !== '') violations.push(`seed ${seed}: incarnation ${event.record.created} written at ${at}, after its loss at ${lost}`);
        }
        // Settled: one live incarnation, the one the peer shows.
        if (!handle.alive) violations.push(`seed ${seed}: not alive once healed and resumed`);
        if (shown !== handle.incarnation) violations.push(`seed ${seed}: the peer shows ${shown}, the member is ${handle.incarnation}`);
        expect(violations).toEqual([]);
        await h.closeAll();
        vi.restoreAllMocks();
      }
    }, 120_000);
  }
});
