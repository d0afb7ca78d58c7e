import { createRegistry, silentLogger, type Registry } from '@rollcall/core';
import type { SelfProbeAnswer, StoreSupports } from '@rollcall/core/spi';
import { ManualClock, MemoryBackend, MemoryStore } from '@rollcall/core/testing';
import { EndpointReadiness } from '../src/endpoint-readiness.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { serveReadinessProbe, type ReadinessProbe } from '../src/readiness-probe.js';

const probes: ReadinessProbe[] = [];
const registries: Registry[] = [];
afterEach(async () => {
  for (const probe of probes.splice(0)) await probe.close();
  for (const registry of registries.splice(0)) await registry.close();
});

/**
 * A registry on a memory store, on `clock`, whose connection the test cuts
 * off and brings back. Its connection state is its own: `lose()` partitions
 * the store and advances the clock until the registry reports `lost` (every
 * lease it could hold run out), and resolves with the clock time it did.
 */
async function memoryRegistry(clock: ManualClock) {
  const store = new MemoryStore({ backend: new MemoryBackend(), cluster: 'probe' });
  const registry = await createRegistry({ type: 'memory', cluster: 'probe', identity: 'p' }, { store, clock });
  registries.push(registry);
  // it reads a role, so it watches the store: a partition ends that watch, and the connection is suspended, then lost
  await registry.members('worker');
  let lostAt = -1;
  registry.on('lost', () => (lostAt = clock.now()));
  const lose = async (): Promise<number> => {
    store.partition();
    expect(await clock.advanceUntil(() => registry.state === 'lost', 120_000), 'the registry to report lost').toBe(true);
    return lostAt;
  };
  const reconnect = async (): Promise<void> => {
    store.heal();
    expect(await clock.advanceUntil(() => registry.state === 'connected', 60_000), 'the registry to reconnect').toBe(true);
  };
  return { registry, lose, reconnect };
}

describe('the readiness probe counts lostGraceMs on its clock', () => {
  it('ready while lost for less than the grace, not ready from the grace on, ready again once connected', async () => {
    const clock = new ManualClock();
    const { registry, lose, reconnect } = await memoryRegistry(clock);
    const probe = await serveReadinessProbe(registry, { port: 0, host: '127.0.0.1', lostGraceMs: 60_000, clock });
    probes.push(probe);
    expect(probe.ready()).toBe(true);
    const lostAt = await lose();
    await clock.advance(lostAt + 59_999 - clock.now());
    expect(probe.ready()).toBe(true);
    await clock.advance(1);
    expect(probe.ready()).toBe(false);
    await reconnect();
    expect(probe.ready()).toBe(true);
  });

  it('a registry already lost when the probe starts counts from then', async () => {
    const clock = new ManualClock();
    const { registry, lose } = await memoryRegistry(clock);
    await lose();
    const probe = await serveReadinessProbe(registry, { port: 0, host: '127.0.0.1', lostGraceMs: 1000, clock });
    probes.push(probe);
    expect(probe.ready()).toBe(true);
    await clock.advance(1000);
    expect(probe.ready()).toBe(false);
  });
});

/** A registry on a memory store that offers the Kubernetes pod readiness source, and the probe answers that source hears. */
async function podRegistry() {
  const clock = new ManualClock();
  const readiness = new EndpointReadiness({ client: undefined as never, logger: silentLogger, namespace: 'ns', serviceTemplate: 'rollcall-{role}', podUid: 'uid-a', servedTimeoutMs: 1000, watchSilenceTimeoutMs: 1000, watchTimeoutSeconds: 60 });
  class PodStore extends MemoryStore {
    override readonly supports: StoreSupports = { syncedProgress: true, podReadiness: true };
    readonly podReadiness = readiness;
  }
  const registry = await createRegistry({ type: 'memory', cluster: 'probe', identity: 'p' }, { store: new PodStore({ backend: new MemoryBackend(), cluster: 'probe' }), clock });
  const answers: SelfProbeAnswer[] = [];
  readiness.onSelfProbe((a) => answers.push(a));
  return { clock, registry, answers };
}

describe("the readiness probe bounds the registry's pod members", () => {
  it('each Ready answer reaches the pod readiness source with the kubelet window of the stanza given; a 503 reports nothing', async () => {
    const { clock, registry, answers } = await podRegistry();
    let healthy = true;
    const probe = await serveReadinessProbe(registry, { port: 0, host: '127.0.0.1', clock, healthy: () => healthy, kubeletProbe: { periodSeconds: 10, failureThreshold: 3, timeoutSeconds: 1 } });
    probes.push(probe);
    const get = async () => (await fetch(`http://127.0.0.1:${probe.port}/readyz`)).status;
    await clock.advance(5_000);
    expect(await get()).toBe(200);
    expect(answers).toEqual([{ at: 5_000, notReadyAfterMs: 27_900 }]); // (3 × 10 + 1) s less a tenth
    healthy = false;
    expect(await get()).toBe(503);
    expect(answers).toHaveLength(1);
    await registry.close();
  });

  it('with kubeletProbe, answers 503 (and vouches for no one) while a member it announced is not alive: past its bound when a pause ends, until announced again', async () => {
    const { clock, registry, answers } = await podRegistry();
    const probe = await serveReadinessProbe(registry, { port: 0, host: '127.0.0.1', clock, kubeletProbe: {} });
    probes.push(probe);
    const get = async () => (await fetch(`http://127.0.0.1:${probe.port}/readyz`)).status;
    const handle = await registry.announce({ role: 'worker', id: 'w1' });
    const first = handle.incarnation;
    expect(await get()).toBe(200);
    expect(answers).toHaveLength(1);
    clock.jump(60_000); // paused past the member's renew deadline: no timer ran, the probe request in flight is answered first
    expect(handle.alive).toBe(false);
    expect(await get()).toBe(503);
    expect(answers).toHaveLength(1);
    await clock.advance(0); // the overdue timers: lost, then announced again as a new incarnation
    await vi.waitFor(() => expect(handle.incarnation).not.toBe(first));
    expect(handle.alive).toBe(true);
    expect(await get()).toBe(200);
    expect(answers).toHaveLength(2);
    await registry.close();
  });

  it('without kubeletProbe its answers bound nothing: none is reported', async () => {
    const { clock, registry, answers } = await podRegistry();
    const probe = await serveReadinessProbe(registry, { port: 0, host: '127.0.0.1', clock });
    probes.push(probe);
    expect((await fetch(`http://127.0.0.1:${probe.port}/readyz`)).status).toBe(200);
    expect(answers).toEqual([]);
    await registry.close();
  });

  it('refuses a stanza that is not whole seconds from 1 to 3600', async () => {
    const { registry } = await memoryRegistry(new ManualClock());
    await expect(serveReadinessProbe(registry, { port: 0, host: '127.0.0.1', kubeletProbe: { periodSeconds: 0 } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('kubeletProbe.periodSeconds 0') });
  });
});
