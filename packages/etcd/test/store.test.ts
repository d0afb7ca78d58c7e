import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { collectWatch, leaseRecord, rejection, uniqueCluster, waitFor } from '@rollcall/conformance';
import { compactServer, TcpProxy } from '@rollcall/tools/testenv';
import { etcdEndpoints, rawClient, Stores } from './support/etcd.js';

const raw = rawClient();
const stores = new Stores();

afterEach(() => stores.closeAll());
afterAll(() => raw.close());

describe('key layout', () => {
  it('keeps one key per record under /rollcall/<cluster>/, as readable JSON', async () => {
    const cluster = uniqueCluster('layout');
    const store = await stores.open({ cluster });
    const written = leaseRecord('w1', { cpu: 0.5, status: 'NORMAL' });
    const created = await store.create('member/worker/w1', written);
    await store.create('election/scheduler', leaseRecord(''));

    const keys = await raw.getAll().prefix(`/rollcall/${cluster}/`).keys();
    expect(keys.sort()).toEqual([`/rollcall/${cluster}/election/scheduler`, `/rollcall/${cluster}/member/worker/w1`]);
    const value = JSON.parse((await raw.get(`/rollcall/${cluster}/member/worker/w1`).string())!);
    expect(value).toEqual(written);
    // The version is the key's mod_revision.
    const [kv] = (await raw.get(`/rollcall/${cluster}/member/worker/w1`).exec()).kvs;
    expect(created.version).toBe(kv!.mod_revision);
  });

  it('uses a configured prefix, and clusters whose names share a beginning do not see each other', async () => {
    const cluster = uniqueCluster('pfx');
    const store = await stores.open({ cluster, prefix: '/apps/coord' });
    const longer = await stores.open({ cluster: `${cluster}-2`, prefix: '/apps/coord' });
    await store.create('lock/jobs', leaseRecord('a'));
    await longer.create('lock/jobs', leaseRecord('b'));
    expect(await raw.get(`/apps/coord/${cluster}/lock/jobs`).string()).toContain('"holderIdentity":"a"');
    const list = await store.list('');
    expect(list.records.map((r) => [r.key, r.record.holderIdentity])).toEqual([['lock/jobs', 'a']]);
    expect(await raw.getAll().prefix(`/rollcall/${cluster}`).keys()).toEqual([]);
  });
});

describe('compare-and-set', () => {
  it('create is refused with ALREADY_EXISTS when the key exists, and nothing changes', async () => {
    const store = await stores.open({ cluster: uniqueCluster('cas') });
    const first = await store.create('lock/a', leaseRecord('one'));
    const err = await rejection(store.create('lock/a', leaseRecord('two')));
    expect(err.code).toBe('ALREADY_EXISTS');
    expect(await store.get('lock/a')).toEqual(first);
  });

  it('update and delete on a stale version are CONFLICT, on a missing key NOT_FOUND; nothing changes', async () => {
    const store = await stores.open({ cluster: uniqueCluster('cas') });
    const v1 = await store.create('lock/a', leaseRecord('one'));
    const v2 = await store.update('lock/a', leaseRecord('two', undefined, 1), v1.version);
    expect(Number(v2.version)).toBeGreaterThan(Number(v1.version));

    expect((await rejection(store.update('lock/a', leaseRecord('three'), v1.version))).code).toBe('CONFLICT');
    expect((await rejection(store.delete('lock/a', v1.version))).code).toBe('CONFLICT');
    expect((await rejection(store.update('lock/a', leaseRecord('three'), 'not-a-version'))).code).toBe('CONFLICT');
    expect((await rejection(store.update('lock/missing', leaseRecord('x'), v2.version))).code).toBe('NOT_FOUND');
    expect((await rejection(store.update('lock/missing', leaseRecord('x'), 'garbage'))).code).toBe('NOT_FOUND');
    expect((await rejection(store.delete('lock/missing', v2.version))).code).toBe('NOT_FOUND');
    expect(await store.get('lock/a')).toEqual(v2);
    expect(await store.get('lock/missing')).toBeUndefined();

    await store.delete('lock/a', v2.version);
    expect(await store.get('lock/a')).toBeUndefined();
  });

  it('versions never repeat across delete and re-create, so a stale version never matches again', async () => {
    const store = await stores.open({ cluster: uniqueCluster('cas') });
    const first = await store.create('member/w/x', leaseRecord('x'));
    await store.delete('member/w/x', first.version);
    const again = await store.create('member/w/x', leaseRecord('x'));
    expect(again.version).not.toBe(first.version);
    expect((await rejection(store.update('member/w/x', leaseRecord('x'), first.version))).code).toBe('CONFLICT');
  });

  it('only one of many concurrent creates, and one of many updates on one version, wins', async () => {
    const cluster = uniqueCluster('race');
    const store = await stores.open({ cluster });
    const other = await stores.open({ cluster });
    const creates = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => (i % 2 ? store : other).create('election/e', leaseRecord(`c${i}`))));
    expect(creates.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const current = (await store.get('election/e'))!;
    const updates = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => (i % 2 ? store : other).update('election/e', leaseRecord(`u${i}`), current.version)));
    expect(updates.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(updates.filter((r) => r.status === 'rejected').map((r) => ((r as PromiseRejectedResult).reason as { code: string }).code)).toEqual(Array(9).fill('CONFLICT'));
  });

  it('a payload beyond maxPayloadBytes is PAYLOAD_TOO_LARGE and writes nothing', async () => {
    const store = await stores.open({ cluster: uniqueCluster('size'), maxPayloadBytes: 100 });
    expect(store.maxPayloadBytes).toBe(100);
    await store.create('member/w/ok', leaseRecord('ok', 'x'.repeat(98)));
    const err = await rejection(store.create('member/w/big', leaseRecord('big', 'x'.repeat(99))));
    expect(err.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await store.get('member/w/big')).toBeUndefined();
  });
});

describe('list and watch', () => {
  it('a watch from a list revision misses nothing and repeats nothing, in order', async () => {
    const store = await stores.open({ cluster: uniqueCluster('watch') });
    const a = await store.create('member/w/a', leaseRecord('a'));
    const list = await store.list('member/');
    expect(list.records.map((r) => r.key)).toEqual(['member/w/a']);
    expect(Number(list.revision)).toBeGreaterThanOrEqual(Number(a.version));

    const watch = collectWatch(store, 'member/', list.revision);
    const b = await store.create('member/w/b', leaseRecord('b'));
    const a2 = await store.update('member/w/a', leaseRecord('a', { n: 1 }), a.version);
    await store.create('lock/not-watched', leaseRecord('z'));
    await store.delete('member/w/b', b.version);

    const events = await watch.untilCount(3);
    expect(events.map((e) => [e.type, e.type === 'delete' ? e.key : e.type === 'put' ? e.record.key : ''])).toEqual([
      ['put', 'member/w/b'],
      ['put', 'member/w/a'],
      ['delete', 'member/w/b'],
    ]);
    expect(events.slice(0, 2).map((e) => e.revision)).toEqual([b.version, a2.version]);
    // lock/not-watched took a revision in between; the delete comes after it.
    expect(Number(events[2]!.revision)).toBeGreaterThan(Number(a2.version) + 1);
    const put = events[1]!;
    expect(put.type === 'put' && put.record).toEqual(a2);
    watch.close();
  });

  it('announces an established watch with a progress event at its start revision, before any change', async () => {
    const store = await stores.open({ cluster: uniqueCluster('progress') });
    const start = (await store.list('')).revision;
    await store.create('lock/one', leaseRecord('1'));
    const watch = collectWatch(store, '', start);
    await watch.untilCount(1);
    expect(watch.all[0]).toEqual({ type: 'progress', revision: start });
    expect(watch.all[1]?.type).toBe('put');
  });

  it('a watch from an old revision replays the changes after it', async () => {
    const store = await stores.open({ cluster: uniqueCluster('replay') });
    const start = (await store.list('')).revision;
    const one = await store.create('lock/one', leaseRecord('1'));
    await store.update('lock/one', leaseRecord('2'), one.version);
    const watch = collectWatch(store, '', start);
    const events = await watch.untilCount(2);
    expect(events.map((e) => e.type === 'put' && e.record.record.holderIdentity)).toEqual(['1', '2']);
  });

  it('a watch from a compacted revision ends with REVISION_TOO_OLD', async () => {
    const store = await stores.open({ cluster: uniqueCluster('compact') });
    const before = (await store.list('')).revision;
    await store.create('lock/x', leaseRecord('x'));
    await store.create('lock/y', leaseRecord('y'));
    // etcd keeps the compaction revision itself: the change right after `before` is gone only when a later one is the compaction point.
    await compactServer('etcd');
    const watch = collectWatch(store, '', before);
    const err = await watch.ended();
    expect(err.code).toBe('REVISION_TOO_OLD');
    expect(watch.events).toEqual([]);
  });

  it('a revision the store never handed out ends the watch with REVISION_TOO_OLD, asynchronously', async () => {
    const store = await stores.open({ cluster: uniqueCluster('badrev') });
    const watch = collectWatch(store, '', 'yesterday');
    expect(watch.error).toBeUndefined();
    expect((await watch.ended()).code).toBe('REVISION_TOO_OLD');
  });

  it('close() ends a watch: no event after it returns', async () => {
    const store = await stores.open({ cluster: uniqueCluster('close') });
    const watch = collectWatch(store, '', (await store.list('')).revision);
    await store.create('lock/1', leaseRecord('1'));
    await watch.untilCount(1);
    watch.close();
    await store.create('lock/2', leaseRecord('2'));
    // A second watch sees lock/2 arrive; the closed one, which was faster before, still has one event.
    const witness = collectWatch(store, '', watch.events[0]!.revision);
    await waitFor(() => witness.events.some((e) => e.type === 'put' && e.record.key === 'lock/2'), 5000, 'lock/2 on the witness');
    expect(watch.events).toHaveLength(1);
    expect(watch.error).toBeUndefined();
  });

  it('closing the store ends its watches with UNAVAILABLE, and later calls fail UNAVAILABLE', async () => {
    const store = await stores.open({ cluster: uniqueCluster('closed') });
    const watch = collectWatch(store, '', (await store.list('')).revision);
    await store.close();
    expect((await watch.ended()).code).toBe('UNAVAILABLE');
    expect((await rejection(store.get('lock/x'))).code).toBe('UNAVAILABLE');
    expect((await rejection(store.create('lock/x', leaseRecord('x')))).code).toBe('UNAVAILABLE');
  });
});

describe('a connection that goes silent', () => {
  it('ends the watch with UNAVAILABLE once keepalive pings go unanswered, and calls time out UNAVAILABLE', async () => {
    const proxy = await TcpProxy.start(etcdEndpoints()[0]!);
    try {
      const store = await stores.open({ cluster: uniqueCluster('silent'), endpoints: [`http://${proxy.address}`], keepaliveIntervalMs: 5000, requestTimeoutMs: 1000 });
      const watch = collectWatch(store, '', (await store.list('')).revision);
      await store.create('lock/before', leaseRecord('x'));
      await watch.untilCount(1);
      proxy.cut('stall');
      const started = performance.now();
      expect((await rejection(store.get('lock/before'))).code).toBe('UNAVAILABLE');
      // keepalive interval 5 s + the ping's own timeout (requestTimeoutMs); generous for a loaded machine.
      const err = await watch.ended(20_000);
      expect(err.code).toBe('UNAVAILABLE');
      expect(performance.now() - started).toBeGreaterThan(900);
    } finally {
      await proxy.close();
    }
  });
});

describe('a key edited by hand into garbage', () => {
  let cluster: string;
  beforeAll(() => {
    cluster = uniqueCluster('corrupt');
  });

  it('is a corrupt entry in list, CORRUPT_RECORD on get, a corrupt event on the watch, and the watch goes on', async () => {
    const store = await stores.open({ cluster });
    const good = await store.create('member/w/good', leaseRecord('good'));
    const watch = collectWatch(store, '', (await store.list('')).revision);

    await raw.put(`/rollcall/${cluster}/member/w/bad`).value('{not json');
    await raw.put(`/rollcall/${cluster}/member/w/shape`).value('{"holderIdentity":42}');
    await raw.put(`/rollcall/${cluster}/member/w/binary`).value(Buffer.from([0xff, 0xfe, 0x00]));
    const after = await store.update('member/w/good', leaseRecord('good', { still: 'watching' }), good.version);

    const events = await watch.untilCount(4);
    expect(events.map((e) => [e.type, e.type === 'corrupt' ? e.entry.key : e.type === 'put' ? e.record.key : ''])).toEqual([
      ['corrupt', 'member/w/bad'],
      ['corrupt', 'member/w/shape'],
      ['corrupt', 'member/w/binary'],
      ['put', 'member/w/good'],
    ]);
    const corrupt = events[0]!;
    if (corrupt.type !== 'corrupt') throw new Error('expected a corrupt event');
    expect(corrupt.entry.error.code).toBe('CORRUPT_RECORD');
    expect(corrupt.entry.error.message).toMatch(/^\[rollcall\] \[etcd\] member\/w\/bad/);
    expect(watch.error).toBeUndefined();

    const list = await store.list('member/');
    expect(list.records).toEqual([after]);
    expect(list.corrupt.map((c) => [c.key, c.error.code])).toEqual([
      ['member/w/bad', 'CORRUPT_RECORD'],
      ['member/w/binary', 'CORRUPT_RECORD'],
      ['member/w/shape', 'CORRUPT_RECORD'],
    ]);
    const err = await rejection(store.get('member/w/shape'));
    expect(err.code).toBe('CORRUPT_RECORD');
    expect(err.message).toContain('holderIdentity is not a string');

    // The corrupt entry has a version, so it can be replaced by compare-and-set.
    const entry = list.corrupt.find((c) => c.key === 'member/w/bad')!;
    const repaired = await store.update('member/w/bad', leaseRecord('fixed'), entry.version);
    expect((await store.get('member/w/bad'))?.record.holderIdentity).toBe('fixed');
    expect(repaired.version).not.toBe(entry.version);
  });
});
