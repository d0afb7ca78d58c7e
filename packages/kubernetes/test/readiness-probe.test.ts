import type { ConnectionState, Registry } from '@rollcall/core';
import { ManualClock } from '@rollcall/core/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { serveReadinessProbe, type ReadinessProbe } from '../src/readiness-probe.js';

/** The part of a Registry the probe reads, with its connection state set by the test. */
function fakeRegistry(initial: ConnectionState) {
  const listeners = new Map<string, Set<(e: { state: ConnectionState }) => void>>();
  const registry = {
    state: initial,
    isOpen: true,
    on(type: string, listener: (e: { state: ConnectionState }) => void) {
      if (!listeners.has(type)) listeners.set(type, new Set());
      listeners.get(type)!.add(listener);
      return () => listeners.get(type)!.delete(listener);
    },
  };
  const become = (state: ConnectionState) => {
    registry.state = state;
    const type = state === 'connected' ? 'reconnected' : state;
    for (const listener of listeners.get(type) ?? []) listener({ state });
  };
  return { registry: registry as unknown as Registry, become };
}

const probes: ReadinessProbe[] = [];
afterEach(async () => {
  for (const probe of probes.splice(0)) await probe.close();
});

describe('the readiness probe counts lostGraceMs on its clock', () => {
  it('ready while lost for less than the grace, not ready from the grace on, ready again once connected', async () => {
    const clock = new ManualClock();
    const { registry, become } = fakeRegistry('connected');
    const probe = await serveReadinessProbe(registry, { port: 0, host: '127.0.0.1', lostGraceMs: 60_000, clock });
    probes.push(probe);
    expect(probe.ready()).toBe(true);
    become('lost');
    await clock.advance(59_999);
    expect(probe.ready()).toBe(true);
    await clock.advance(1);
    expect(probe.ready()).toBe(false);
    become('connected');
    expect(probe.ready()).toBe(true);
  });

  it('a registry already lost when the probe starts counts from then', async () => {
    const clock = new ManualClock();
    const { registry } = fakeRegistry('lost');
    const probe = await serveReadinessProbe(registry, { port: 0, host: '127.0.0.1', lostGraceMs: 1000, clock });
    probes.push(probe);
    expect(probe.ready()).toBe(true);
    await clock.advance(1000);
    expect(probe.ready()).toBe(false);
  });
});
