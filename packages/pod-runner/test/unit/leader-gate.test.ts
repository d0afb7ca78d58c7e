import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type Registry } from '@rollcall/core';
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
  g.start({ elected: (token) => events.push(`elected ${token}`), lost: (reason) => events.push(`lost ${reason}`) });
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
});
