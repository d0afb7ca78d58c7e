import { afterEach, expect, it } from 'vitest';
import type { StoreSessionState } from '@rollcall/core/spi';
import { leaseRecord, rejection, uniqueCluster, waitFor } from '@rollcall/conformance';
import { TcpProxy } from '@rollcall/tools/testenv';
import type { ZookeeperStore } from '../src/index.js';
import { rawClient, standalone, storeFactory } from './helpers.js';

const stores = storeFactory();
const proxies: TcpProxy[] = [];
afterEach(async () => {
  await stores.closeAll();
  await Promise.all(proxies.splice(0).map((p) => p.close()));
});

async function proxied(sessionTimeoutMs: number): Promise<{ store: ZookeeperStore; proxy: TcpProxy; states: { state: StoreSessionState; at: number }[] }> {
  const proxy = await TcpProxy.start(standalone());
  proxies.push(proxy);
  const store = await stores.open({ cluster: uniqueCluster('session'), connectString: proxy.address, sessionTimeoutMs, requestTimeoutMs: 1000, openAcl: true });
  const states: { state: StoreSessionState; at: number }[] = [];
  store.onSessionState((state) => states.push({ state, at: performance.now() }));
  return { store, proxy, states };
}

/** Waits (bounded) until the session states begin with `wanted`. */
function waitState(states: { state: StoreSessionState }[], wanted: StoreSessionState[], timeoutMs: number): Promise<unknown> {
  return waitFor(() => wanted.every((w, i) => states[i]?.state === w), timeoutMs, () => `states ${wanted.join(', ')} (saw ${states.map((s) => s.state).join(', ')})`);
}

it('a connection that goes silent (the library still "connected") is suspended within 2/3 of the session timeout, lost at the timeout, then a new session starts', async () => {
  const { store, proxy, states } = await proxied(3000);
  const timeout = store.session.sessionTimeoutMs;
  expect(timeout).toBe(3000);
  const firstSession = store.session.sessionId;
  await store.create('lock/before', leaseRecord('a'));
  const cutAt = performance.now();
  proxy.cut('blackhole');
  await waitState(states, ['suspended', 'lost'], timeout + 2000);
  const suspendedAfter = states[0]!.at - cutAt;
  const lostAfter = states[1]!.at - cutAt;
  // Silence is noticed by the read timeout (2/3) checked every 1/3: suspended between 1/3 and a full timeout after the cut.
  expect(suspendedAfter).toBeLessThanOrEqual(timeout + 500); // 500 ms for timer lag on a loaded machine
  // Lost no later than the server could expire the session: one timeout after the last answered request was sent, which is before the cut.
  expect(lostAfter).toBeLessThanOrEqual(timeout + 500);
  expect(lostAfter).toBeGreaterThanOrEqual(timeout - timeout / 3 - 200);
  // While cut off, a call waits unsent for the connection, then fails when its time is up; it is never sent later.
  const started = performance.now();
  expect((await rejection(store.create('lock/while-cut', leaseRecord('b')))).code).toBe('UNAVAILABLE');
  expect(performance.now() - started).toBeGreaterThanOrEqual(950);
  proxy.heal();
  await waitState(states, ['suspended', 'lost', 'connected'], 10_000);
  expect(store.session.sessionId).not.toBe(firstSession);
  // The new session works, and the call made while cut off was never sent.
  const created = await store.create('lock/after', leaseRecord('c'));
  expect((await store.get('lock/after'))?.version).toBe(created.version);
  expect(await store.get('lock/while-cut')).toBeUndefined();
  expect(states.map((s) => s.state)).toEqual(['suspended', 'lost', 'connected']);
});

it('a connection reset and back within the session timeout is suspended then connected, on the same session, never lost', async () => {
  const { store, proxy, states } = await proxied(6000);
  const session = store.session.sessionId;
  proxy.cut('reset');
  await waitState(states, ['suspended'], 2000);
  expect((await rejection(store.list(''))).code).toBe('UNAVAILABLE');
  // A call made while suspended goes out once the session is back, within its requestTimeoutMs.
  const pending = store.create('lock/during', leaseRecord('d'));
  proxy.heal();
  expect((await pending).key).toBe('lock/during');
  await waitState(states, ['suspended', 'connected'], 4000);
  expect(store.session.sessionId).toBe(session);
  await store.create('lock/l', leaseRecord('a'));
  expect(states.map((s) => s.state)).toEqual(['suspended', 'connected']);
});

it('a request sent into a silent connection fails UNAVAILABLE after requestTimeoutMs, before the session is even suspended', async () => {
  const { store, proxy, states } = await proxied(6000);
  proxy.cut('blackhole');
  const started = performance.now();
  const err = await rejection(store.create('lock/lost-in-transit', leaseRecord('a')));
  const elapsed = performance.now() - started;
  expect(err.code).toBe('UNAVAILABLE');
  expect(elapsed).toBeGreaterThanOrEqual(950);
  expect(elapsed).toBeLessThan(2500);
  expect(states).toEqual([]);
  proxy.heal();
  const raw = await rawClient(standalone());
  try {
    expect(await raw.exists(`${store.clusterPath}/lock%2Flost-in-transit`)).toBeNull();
  } finally {
    raw.close();
  }
});

it('close() ends the session at once and fails later calls UNAVAILABLE', async () => {
  const { store, states } = await proxied(4000);
  await store.close();
  expect((await rejection(store.get('lock/l'))).code).toBe('UNAVAILABLE');
  expect(states).toEqual([]);
});
