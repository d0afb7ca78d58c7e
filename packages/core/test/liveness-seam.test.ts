import { afterEach, describe, expect, it } from 'vitest';
import type { MemberEvent } from '../src/index.js';
import type { LivenessContext, LivenessFactory, LivenessStrategy } from '../src/member-liveness.js';
import { Registry } from '../src/registry.js';
import { memberKey } from '../src/spi.js';
import { MemoryStore } from '../src/testing.js';
import { Harness } from './harness.js';

const LEASE = 20_000;

/**
 * A mode without heartbeats, as the pod mode of a later issue: a member is alive
 * while something outside its record says so (here a set of ready keys), and
 * readers learn of a change through the context's `rejudge`.
 */
function readinessMode(ready: Set<string>, contexts: LivenessContext[]): LivenessFactory {
  return (context): LivenessStrategy => {
    contexts.push(context);
    return {
      mode: 'heartbeat',
      // Kept alive by something else: written once, never renewed.
      keep: (member) => ({ liveness: { mode: 'heartbeat' }, renewDeadlineMs: undefined, start: async () => void (await member.writeMember()), beat: async () => {}, stop: () => {}, withdrawn: async () => {} }),
      verdict: (entry) => (ready.has(entry.key) ? 'present' : 'absent'),
      reading: () => {},
      close: () => {},
    };
  };
}

describe('the liveness seam: a mode is a strategy the registry takes as it opens', () => {
  let h: Harness;
  const opened: Registry[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((r) => r.close()));
    await h.closeAll();
  });

  it('a mode without heartbeats writes a member once; readers trust it while the mode vouches, and hear when that changes', async () => {
    h = new Harness();
    const { registry: template } = await h.registry('template', { member: { heartbeatIntervalMs: 5000, leaseDurationMs: LEASE } });
    const ready = new Set<string>([memberKey('worker', 'w1')]);
    const contexts: LivenessContext[] = [];
    const open = async (identity: string) => {
      const registry = await Registry.open(new MemoryStore({ backend: h.backend, cluster: 'test' }), { ...template.config, identity }, { clock: h.clock, liveness: readinessMode(ready, contexts) });
      opened.push(registry);
      return registry;
    };
    const a = await open('a');
    const r = await open('r');
    const events: MemberEvent[] = [];
    r.watchMembers('worker', (e) => events.push(e));
    await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
    await h.clock.advance(0);
    const row = () => h.backend.rows.get(`test/${memberKey('worker', 'w1')}`);
    const written = row()!.version;
    await h.clock.advance(3 * LEASE);
    expect(row()!.version).toBe(written); // no heartbeat
    expect(events.map((e) => e.type)).toEqual(['added']); // and no expiry judged by readers
    ready.delete(memberKey('worker', 'w1'));
    contexts[1]!.rejudge(memberKey('worker', 'w1'));
    expect(events.at(-1)).toMatchObject({ type: 'removed', reason: 'expired', member: { id: 'w1', payload: { n: 1 } } });
    ready.add(memberKey('worker', 'w1'));
    contexts[1]!.rejudge(memberKey('worker', 'w1'));
    expect(events.map((e) => e.type)).toEqual(['added', 'removed', 'added']);
    expect(await r.members('worker')).toMatchObject([{ id: 'w1' }]);
  });
});
