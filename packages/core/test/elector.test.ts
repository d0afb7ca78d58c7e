import { afterEach, describe, expect, it } from 'vitest';
import { GatedStore, Harness, skewedClock, StalledWatchStore, until } from './harness.js';

const HOUR = 3_600_000;

describe('elector on the injected clock', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('a holder that cannot renew steps down at its renew deadline, before anyone may take over', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const events: string[] = [];
    const la = a.registry.campaign('scheduler');
    la.on('elected', () => events.push(`a elected @${h.clock.now()}`));
    la.on('lost', (e) => events.push(`a lost ${e.reason} @${h.clock.now()}`));
    await h.clock.advance(0);
    expect(la.isLeader).toBe(true);
    const lb = b.registry.campaign('scheduler');
    lb.on('elected', () => events.push(`b elected @${h.clock.now()}`));
    await h.clock.advance(4_500); // renewals sent at 2000 and 4000 succeed
    a.store.partition();
    await h.clock.advance(9_499);
    expect(la.isLeader).toBe(true); // 13999: still inside 4000 + renewDeadline
    await h.clock.advance(1);
    expect(la.isLeader).toBe(false);
    expect(events).toContain('a lost renew-deadline @14000');
    await h.clock.advance(4_999); // 18999: B saw the 4000 renew at 4000; its lease of 15 s has not run out
    expect(lb.isLeader).toBe(false);
    const elected = await h.clock.advanceUntil(() => lb.isLeader, 3_000, 1);
    expect(elected).toBe(true);
    const bElectedAt = Number(events.find((e) => e.startsWith('b elected'))!.split('@')[1]);
    expect(bElectedAt).toBeGreaterThanOrEqual(19_000);
    expect(events.indexOf('a lost renew-deadline @14000')).toBeLessThan(events.findIndex((e) => e.startsWith('b elected')));
    expect(lb.fencingToken).toBe(2);
  });

  it('a candidate whose store refuses at once retries an expired lease once per retry period, never in a loop', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    await a.registry.campaign('scheduler').whenElected();
    a.store.partition(); // the holder goes silent: its lease runs out for b
    let attempts = 0;
    for (const method of ['get', 'create', 'update'] as const) {
      const original = b.store[method].bind(b.store);
      (b.store as unknown as Record<string, unknown>)[method] = (...args: Parameters<typeof original>) => (attempts++, original(...(args as [never, never, never])));
    }
    b.store.refusing = true; // every write fails UNAVAILABLE at once; the watch goes on
    b.registry.campaign('scheduler');
    await h.clock.advance(20_000); // past the 15 s lease b saw
    const before = attempts;
    await h.clock.advance(10_000); // 2 s retry period, up to 20 % longer: about five attempts
    expect(attempts - before).toBeGreaterThanOrEqual(4);
    expect(attempts - before).toBeLessThanOrEqual(6);
  });

  // Without the rule it loops at one instant: the manual clock never leaves the advance, and the test times out.
  it('a candidate whose watch stalled silently while the holder renews retries its CONFLICT once per retry period, never in a loop', { timeout: 10_000 }, async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b', {}, h.clock, new StalledWatchStore({ backend: h.backend, cluster: 'test' }));
    await a.registry.campaign('scheduler').whenElected();
    let updates = 0;
    const original = b.store.update.bind(b.store);
    b.store.update = (...args: Parameters<typeof original>) => (updates++, original(...args));
    const lb = b.registry.campaign('scheduler');
    await h.clock.advance(100);
    b.store.stalled = true; // b's cache keeps the record as it was: past 15 s it looks expired, and every write on it is a CONFLICT
    await h.clock.advance(20_000);
    const before = updates;
    await h.clock.advance(10_000); // 2 s retry period, up to 20 % longer: about five attempts
    expect(lb.isLeader).toBe(false);
    expect(updates - before).toBeGreaterThanOrEqual(4);
    expect(updates - before).toBeLessThanOrEqual(6);
  });

  it('a candidate whose wall clock runs an hour ahead does not take a live lease', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const ahead = await h.registry('ahead', {}, skewedClock(h.clock, HOUR));
    const la = a.registry.campaign('scheduler');
    await h.clock.advance(0);
    const lb = ahead.registry.campaign('scheduler');
    let bElected = false;
    lb.on('elected', () => (bElected = true));
    // Its renewTime looks an hour stale to the skewed host, which must not matter.
    await h.clock.advance(5 * 60_000);
    expect(la.isLeader).toBe(true);
    expect(bElected).toBe(false);
    // Once the holder really stops, the skewed candidate takes over after one lease of its own time.
    a.store.partition();
    const lastRenew = h.clock.now() - (h.clock.now() % 2_000);
    await h.clock.advanceUntil(() => lb.isLeader, 30_000, 10);
    expect(lb.isLeader).toBe(true);
    expect(h.clock.now()).toBeGreaterThanOrEqual(lastRenew + 15_000);
  });

  it('a candidate whose wall clock runs an hour behind does not take a live lease either', async () => {
    h = new Harness();
    const behind = await h.registry('behind', {}, skewedClock(h.clock, -HOUR));
    const a = await h.registry('a');
    const la = a.registry.campaign('scheduler');
    await h.clock.advance(0);
    const lb = behind.registry.campaign('scheduler');
    await h.clock.advance(5 * 60_000);
    expect(la.isLeader).toBe(true);
    expect(lb.isLeader).toBe(false);
  });

  it('fencing tokens never repeat across resigns, crashes and re-campaigns', async () => {
    h = new Harness();
    const tokens: number[] = [];
    const candidates = await Promise.all(['c0', 'c1', 'c2', 'c3', 'c4'].map((id) => h.registry(id)));
    const leaderships = candidates.map((c) => {
      const l = c.registry.campaign('scheduler');
      l.on('elected', (e) => tokens.push(e.fencingToken));
      return l;
    });
    for (let round = 0; round < 30; round++) {
      await h.clock.advanceUntil(() => leaderships.some((l) => l.isLeader), 40_000, 50);
      const leaders = leaderships.filter((l) => l.isLeader);
      expect(leaders).toHaveLength(1);
      const index = leaderships.indexOf(leaders[0]!);
      if (round % 3 === 2) {
        // A crash: cut off, and replaced by a new incarnation with the same identity.
        candidates[index]!.store.partition();
        await h.clock.advanceUntil(() => !leaderships[index]!.isLeader, 20_000, 50);
        await candidates[index]!.registry.close();
        candidates[index] = await h.registry(`c${index}`);
        leaderships[index] = candidates[index]!.registry.campaign('scheduler');
        leaderships[index]!.on('elected', (e) => tokens.push(e.fencingToken));
      } else {
        await leaders[0]!.resign();
        leaderships[index] = candidates[index]!.registry.campaign('scheduler');
        leaderships[index]!.on('elected', (e) => tokens.push(e.fencingToken));
      }
    }
    expect(tokens.length).toBeGreaterThanOrEqual(30);
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]!);
  });

  it('resign hands over through the watch, with no poll in between', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const la = a.registry.campaign('scheduler');
    await h.clock.advance(0);
    const lb = b.registry.campaign('scheduler');
    await h.clock.advance(700);
    await la.resign();
    await h.clock.advance(0); // no time passes: only the watch can have woken B
    expect(lb.isLeader).toBe(true);
  });

  it('a follower makes no backend calls while the leader renews', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    a.registry.campaign('scheduler');
    await h.clock.advance(0);
    b.registry.campaign('scheduler');
    await h.clock.advance(100);
    let calls = 0;
    for (const method of ['get', 'create', 'update', 'delete', 'list'] as const) {
      const original = b.store[method].bind(b.store) as (...args: unknown[]) => Promise<unknown>;
      (b.store as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        calls++;
        return original(...args);
      };
    }
    await h.clock.advance(60_000);
    expect(calls).toBe(0);
  });

  it('a record deleted by hand is not free before its holder has stepped down, and tokens do not restart', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const b = await h.registry('b');
    const order: string[] = [];
    const la = a.registry.campaign('scheduler');
    la.on('lost', (e) => order.push(`a lost ${e.reason}`));
    await h.clock.advance(0);
    const lb = b.registry.campaign('scheduler');
    lb.on('elected', (e) => order.push(`b elected ${e.fencingToken}`));
    await la.resign();
    await h.clock.advance(0);
    expect(lb.fencingToken).toBe(2);
    order.length = 0;
    lb.on('lost', (e) => order.push(`b lost ${e.reason}`));
    const renewedA = a.registry.campaign('scheduler'); // a follows again
    renewedA.on('elected', (e) => order.push(`a elected ${e.fencingToken}`));
    const row = [...h.backend.rows.values()][0]!;
    h.backend.commit(row.path, undefined); // kubectl delete, behind everyone's back
    await h.clock.advance(0);
    expect(lb.isLeader).toBe(true); // b learns at its next renew, not before
    await h.clock.advance(20_000);
    const leaders = [lb, renewedA].filter((l) => l.isLeader);
    expect(leaders).toHaveLength(1);
    expect(leaders[0]!.fencingToken).toBeGreaterThan(2);
    // Whoever leads now, the old term ended before a new one began.
    expect(order[0]).toBe('b lost deleted');
    expect(order.slice(1).every((e) => e.includes('elected'))).toBe(true);
  });

  it('past its renew deadline a holder reads isLeader false before any timer runs, and its overdue renew does not revive the term', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const events: string[] = [];
    const la = a.registry.campaign('scheduler');
    la.on('elected', (e) => events.push(`elected ${e.fencingToken}`));
    la.on('lost', (e) => events.push(`lost ${e.fencingToken} ${e.reason}`));
    await h.clock.advance(4_500); // renewed at 2000 and 4000: deadline 14000
    h.clock.jump(9_499); // 13999, as a process resumed from a pause finds it
    expect(la.isLeader).toBe(true);
    expect(la.fencingToken).toBe(1);
    h.clock.jump(1); // 14000: no timer has run yet
    expect(la.isLeader).toBe(false);
    expect(la.fencingToken).toBeUndefined();
    expect(events).toEqual(['elected 1']);
    // The overdue renew timers (due at 6000 … 14000) fire first and end the term instead of
    // renewing it; the holder frees the record and, campaigning again, takes a new term.
    await h.clock.advanceUntil(() => la.isLeader, 5_000, 10);
    expect(events).toEqual(['elected 1', 'lost 1 renew-deadline', 'elected 2']);
    expect(la.fencingToken).toBe(2);
  });

  it('an acquisition whose write came back after its own renew deadline is never announced', async () => {
    h = new Harness();
    const gated = new GatedStore({ backend: h.backend, cluster: 'test' });
    const a = await h.registry('a', {}, h.clock, gated);
    const events: string[] = [];
    gated.hold();
    const la = a.registry.campaign('scheduler');
    la.on('elected', (e) => events.push(`elected ${e.fencingToken} @${h.clock.now()}`));
    la.on('lost', (e) => events.push(`lost ${e.reason}`));
    await until(() => h.backend.rows.size === 1); // the create is applied at 0; its reply is held
    h.clock.jump(10_000); // resumed from a pause: the reply is read before any overdue timer (the request timeout) runs
    gated.open();
    await until(() => h.backend.rows.values().next().value?.record.holderIdentity === ''); // given back at once
    expect(la.isLeader).toBe(false);
    expect(events).toEqual([]);
    // Campaigning on, it takes a new term with a write that came back in time: term 1 was never announced.
    await h.clock.advanceUntil(() => la.isLeader, 5_000, 10);
    expect(events).toEqual(['elected 2 @10000']);
  });

  it('the first renew comes a retry period after the acquisition, and every write has a new renewTime', async () => {
    h = new Harness();
    const writes: { at: number; renewTime: string | null }[] = [];
    h.backend.subscribe((c) => c.row && writes.push({ at: h.clock.now(), renewTime: c.row.record.renewTime }));
    const a = await h.registry('a');
    a.registry.campaign('scheduler');
    await h.clock.advance(0);
    await h.clock.advance(6_000);
    // The watch shows the holder its own acquisition; that is no reason to write again at once.
    expect(writes.map((w) => w.at)).toEqual([0, 2_000, 4_000, 6_000]);
    expect(new Set(writes.map((w) => w.renewTime)).size).toBe(writes.length);
  });
});
