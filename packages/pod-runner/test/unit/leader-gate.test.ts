import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
import { rejection } from '@rollcall/conformance';
import { ManualClock, MemoryBackend, MemoryStore } from '@rollcall/core/testing';
import { LeaderGate } from '../../src/leader-gate.js';

const clock = new ManualClock();
const backend = new MemoryBackend();
const opened: Registry[] = [];

async function registry(identity: string): Promise<Registry> {
  const r = await createRegistry({ type: 'memory', identity }, { store: new MemoryStore({ backend, cluster: 'gate' }), clock });
  opened.push(r);
  return r;
}

function gate(r: Registry | undefined, identity: string) {
  const events: string[] = [];
  const g = new LeaderGate(r, 'pod-runner-test', identity);
  g.start({ elected: (token) => events.push(`elected ${token}`), lost: (reason) => events.push(`lost ${reason}`), fenced: (verb) => events.push(`fenced ${verb}`) });
  return { g, events };
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((r) => r.close()));
});

describe('LeaderGate', () => {
  it('leads at once and for good without a registry, with no fencing token', () => {
    const { g, events } = gate(undefined, 'alone');
    expect(g.isLeader).toBe(true);
    expect(g.fencingToken).toBeUndefined();
    expect(events).toEqual([]);
  });

  it('lets one of two runners lead, and the other once the first resigns, with a newer token', async () => {
    const a = gate(await registry('a'), 'a');
    expect(await clock.advanceUntil(() => a.g.isLeader, 5000)).toBe(true);
    const b = gate(await registry('b'), 'b');
    await clock.advance(1000);
    expect(b.g.isLeader).toBe(false);
    expect(b.g.fencingToken).toBeUndefined();
    const first = a.g.fencingToken!;
    expect(a.events).toEqual([`elected ${first}`]);

    await a.g.close();
    expect(await clock.advanceUntil(() => b.g.isLeader, 30_000)).toBe(true);
    expect(b.g.fencingToken!).toBeGreaterThan(first);
    expect(b.events).toEqual([`elected ${b.g.fencingToken}`]);
  });

  it('fences writes the moment its renew deadline has passed, before its timers have run (a process resumed from SIGSTOP)', async () => {
    const a = gate(await registry('a'), 'a');
    expect(await clock.advanceUntil(() => a.g.isLeader, 5000)).toBe(true);
    const token = a.g.fencingToken!;
    expect(() => a.g.fence('create')).not.toThrow();
    // default renew deadline 10 s: past it by the monotonic clock, with no timer fired and no `lost` heard yet
    clock.jump(10_001);
    expect(a.events).toEqual([`elected ${token}`]);
    expect(a.g.isLeader).toBe(false);
    expect(a.g.fencingToken).toBeUndefined();
    expect(await rejection(async () => a.g.fence('delete'))).toMatchObject({ code: 'LEASE_LOST', reason: 'renew-deadline', message: expect.stringContaining('not sending delete') });
    expect(a.events).toEqual([`elected ${token}`, 'fenced delete']);
  });

  it('fences writes once a pod carries a newer term\'s token than its own, and not for an older or unreadable one', async () => {
    const a = gate(await registry('a'), 'a');
    expect(await clock.advanceUntil(() => a.g.isLeader, 5000)).toBe(true);
    const token = a.g.fencingToken!;
    a.g.see(String(token - 1));
    a.g.see('not a number');
    a.g.see(undefined);
    expect(a.g.isLeader).toBe(true);
    a.g.see(String(token + 1));
    expect(a.g.isLeader).toBe(false);
    expect(await rejection(async () => a.g.fence('patch'))).toMatchObject({ code: 'LEASE_LOST', reason: 'taken' });
  });

  it('never fences a runner without a registry', () => {
    const { g } = gate(undefined, 'alone');
    g.see('99');
    expect(() => g.fence('create')).not.toThrow();
  });
});
