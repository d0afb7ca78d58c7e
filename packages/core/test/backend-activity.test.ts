import { afterEach, describe, expect, it } from 'vitest';
import { observeBackend, type BackendActivity, type Registry } from '../src/index.js';
import { registryStore } from '../src/admin.js';
import { GatedStore, Harness } from './harness.js';

let h: Harness;
afterEach(async () => h?.closeAll());

/** Every activity `registry` reports from now on. */
function record(registry: Registry): BackendActivity[] {
  const seen: BackendActivity[] = [];
  observeBackend(registry, (a) => seen.push(a));
  return seen;
}

const requests = (seen: BackendActivity[]) => seen.flatMap((a) => (a.type === 'request' ? [`${a.operation} ${a.code ?? 'OK'} ${a.durationMs}`] : []));

describe('observeBackend', () => {
  it('reports each call with its operation, its duration by the registry clock and its outcome', async () => {
    h = new Harness();
    const store = new GatedStore({ backend: h.backend, cluster: 'test' });
    const { registry } = await h.registry('a', { requestTimeoutMs: 1000 }, h.clock, store);
    const seen = record(registry);

    const member = await registry.announce({ role: 'worker', id: 'w1' });
    expect(requests(seen)).toEqual(['create OK 0']);

    // A compare-and-set on a version changed by someone else is refused, an answer with its code; the member reads and writes again.
    const raw = registryStore(registry);
    const current = (await raw.get('member/worker/w1'))!;
    await raw.update('member/worker/w1', current.record, current.version);
    await member.update({ load: 1 });
    expect(requests(seen)).toEqual(['create OK 0', 'update CONFLICT 0', 'get OK 0', 'update OK 0']);

    // A write whose reply never comes within the request timeout.
    store.hold();
    const late = member.update({ load: 2 }).catch((e: unknown) => e);
    await h.clock.advance(1000);
    expect(await late).toMatchObject({ code: 'UNAVAILABLE' });
    store.open();
    expect(requests(seen).at(-1)).toBe('update UNAVAILABLE 1000');
  });

  it('reports the watch: its events, each break with its code, the relist after REVISION_TOO_OLD, and closed at the end', async () => {
    h = new Harness();
    const { registry, store } = await h.registry('observer');
    const seen = record(registry);
    await registry.members('worker'); // what it reads, it watches
    const { registry: peer } = await h.registry('peer');
    await peer.announce({ role: 'worker', id: 'w1' });
    await h.clock.advance(0);
    expect(seen).toContainEqual({ type: 'watchEvent', event: 'put' });

    store.partition();
    await h.clock.advance(0);
    expect(seen).toContainEqual({ type: 'watchEnded', code: 'UNAVAILABLE' });
    await peer.announce({ role: 'worker', id: 'w2' });
    h.backend.compact(); // the observer's revision is gone: it must relist
    store.heal();
    await h.clock.advanceUntil(() => seen.some((a) => a.type === 'watchEnded' && a.code === 'REVISION_TOO_OLD'), 5000);
    const afterTooOld = seen.slice(seen.findIndex((a) => a.type === 'watchEnded' && a.code === 'REVISION_TOO_OLD'));
    await h.clock.advanceUntil(() => requests(afterTooOld).some((r) => r.startsWith('list OK')), 5000);
    expect(requests(seen.slice(seen.indexOf(afterTooOld[0]!)))).toEqual(expect.arrayContaining([expect.stringMatching(/^list OK/), 'watch OK 0']));
    expect(await registry.members('worker')).toHaveLength(2);

    await registry.close();
    expect(seen.at(-1)).toEqual({ type: 'closed' });
    const count = seen.length;
    await peer.announce({ role: 'worker', id: 'w3' });
    await h.clock.advance(1000);
    expect(seen).toHaveLength(count);
    expect(() => observeBackend(registry, () => {})).toThrow(expect.objectContaining({ code: 'CLOSED' }));
  });

  it('a listener that throws changes nothing for the registry or the other listeners; unsubscribing stops the calls', async () => {
    h = new Harness();
    const { registry } = await h.registry('a');
    observeBackend(registry, () => {
      throw new Error('a broken exporter');
    });
    const seen: BackendActivity[] = [];
    const off = observeBackend(registry, (a) => seen.push(a));
    await registry.announce({ role: 'worker', id: 'w1' });
    expect(requests(seen)).toEqual(['create OK 0']);
    off();
    await registry.announce({ role: 'worker', id: 'w2' });
    expect(requests(seen)).toEqual(['create OK 0']);
    expect(await registry.members('worker')).toHaveLength(2);
  });

  it('refuses what is not a registry made by createRegistry', () => {
    expect(() => observeBackend({} as Registry, () => {})).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
