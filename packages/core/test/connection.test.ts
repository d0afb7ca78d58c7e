import { describe, expect, it } from 'vitest';
import { silentLogger } from '../src/index.js';
import { ConnectionMonitor } from '../src/connection-monitor.js';
import { MonitoredStore } from '../src/monitored-store.js';
import { ManualClock, MemoryBackend } from '../src/testing.js';
import { GatedStore } from './harness.js';

const REQUEST_TIMEOUT_MS = 1000;
const record = { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 };

describe('the connection state', () => {
  it('a call that waited out an outage and times out just after the reconnect does not suspend the new connection; a later call that times out does', async () => {
    const clock = new ManualClock();
    const inner = new GatedStore({ backend: new MemoryBackend(), cluster: 'test' });
    const monitor = new ConnectionMonitor({ clock, logger: silentLogger, backend: 'memory', lostAfterMs: 6000, probeIntervalMs: 500, probe: () => new Promise(() => {}) });
    const states: string[] = [];
    for (const type of ['suspended', 'lost', 'reconnected'] as const) monitor.on(type, () => states.push(`${type} @${clock.now()}`));
    const store = new MonitoredStore(inner, clock, REQUEST_TIMEOUT_MS, monitor);
    inner.hold();
    monitor.session('suspended');
    await clock.advance(100);
    // Sent while the backend is unreachable; its answer comes late.
    const queued = store.create('lock/a', record).catch((e: unknown) => e);
    await clock.advance(800);
    monitor.session('connected'); // @900: back, while the queued call is still unanswered
    await clock.advance(300); // @1200: the queued call ran out of time
    expect(await queued).toMatchObject({ code: 'UNAVAILABLE' });
    expect(states).toEqual(['suspended @0', 'reconnected @900']);
    expect(monitor.state).toBe('connected');

    const fresh = store.create('lock/b', record).catch((e: unknown) => e);
    await clock.advance(REQUEST_TIMEOUT_MS);
    expect(await fresh).toMatchObject({ code: 'UNAVAILABLE' });
    expect(states).toEqual(['suspended @0', 'reconnected @900', 'suspended @2200']);
    inner.open();
    monitor.close();
  });
});
