import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createRegistry } from '@rollcall/core';
import type { LeaseRecord } from '@rollcall/core/spi';
import { createEtcdStore, type EtcdStore } from '../src/index.js';
import { observeFor, uniqueCluster, waitFor } from '@rollcall/conformance';
import { TcpProxy } from '@rollcall/tools/testenv';
import { etcdEndpoints, rawClient } from './support/etcd.js';

const TTL = 3;
const raw = rawClient();
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((o) => o.close()));
});
afterAll(() => raw.close());

const record: LeaseRecord = { holderIdentity: 'x', leaseDurationSeconds: TTL, acquireTime: null, renewTime: null, leaseTransitions: 0 };

async function store(cluster: string, endpoints = etcdEndpoints()): Promise<EtcdStore> {
  const s = await createEtcdStore({ cluster, endpoints, memberLeaseSeconds: TTL, requestTimeoutMs: 1000 });
  opened.push(s);
  return s;
}

async function leaseOf(key: string): Promise<string | undefined> {
  const { kvs } = await raw.kv.range({ key: Buffer.from(key) });
  return kvs[0]?.lease;
}

describe('member keys bound to an etcd lease (memberLeaseSeconds)', () => {
  it('binds member keys only, keeps the lease across updates and alive past its TTL', async () => {
    const cluster = uniqueCluster('lease');
    const s = await store(cluster);
    const member = await s.create('member/worker/w1', record);
    await s.create('election/e', record);
    await s.create('lock/l', record);
    const lease = await leaseOf(`/rollcall/${cluster}/member/worker/w1`);
    expect(lease).toMatch(/^[1-9]\d*$/);
    expect(await leaseOf(`/rollcall/${cluster}/election/e`)).toBe('0');
    expect(await leaseOf(`/rollcall/${cluster}/lock/l`)).toBe('0');
    await s.update('member/worker/w1', { ...record, payload: { n: 2 } }, member.version);
    expect(await leaseOf(`/rollcall/${cluster}/member/worker/w1`)).toBe(lease);
    // One lease per store.
    await s.create('member/worker/w2', record);
    expect(await leaseOf(`/rollcall/${cluster}/member/worker/w2`)).toBe(lease);
    // Kept alive: after twice the TTL the key is still there, on the same lease.
    // Here time passing is the point, not a stand-in for an event.
    await observeFor(2 * TTL * 1000);
    expect(await leaseOf(`/rollcall/${cluster}/member/worker/w1`)).toBe(lease);
  });

  it('a process that went silent loses its member keys to etcd after the TTL, with no one observing', async () => {
    const cluster = uniqueCluster('lease-silent');
    const proxy = await TcpProxy.start(etcdEndpoints()[0]!);
    opened.push(proxy);
    const s = await store(cluster, [`http://${proxy.address}`]);
    await s.create('member/worker/gone', record);
    await s.create('lock/stays', record);
    const started = performance.now();
    proxy.cut('stall');
    await waitFor(async () => (await leaseOf(`/rollcall/${cluster}/member/worker/gone`)) === undefined, TTL * 1000 + 10_000, 'etcd to delete the member key');
    // Not before the TTL (less a second of rounding by etcd's lessor).
    expect(performance.now() - started).toBeGreaterThan((TTL - 1) * 1000);
    expect(await leaseOf(`/rollcall/${cluster}/lock/stays`)).toBe('0');
  });

  it('close() revokes the lease: the member keys go at once', async () => {
    const cluster = uniqueCluster('lease-close');
    const s = await createEtcdStore({ cluster, endpoints: etcdEndpoints(), memberLeaseSeconds: 60 });
    await s.create('member/worker/w1', record);
    await s.close();
    expect(await leaseOf(`/rollcall/${cluster}/member/worker/w1`)).toBeUndefined();
  });

  it('a lease revoked behind its back: the member is re-announced by its heartbeat on a new lease', async () => {
    const cluster = uniqueCluster('lease-revoked');
    const registry = await createRegistry({
      type: 'etcd',
      cluster,
      member: { heartbeatIntervalMs: 300, leaseDurationMs: 3000 },
      etcd: { endpoints: etcdEndpoints(), memberLeaseSeconds: TTL },
    });
    opened.push(registry);
    await registry.announce({ role: 'worker', id: 'w1' });
    const key = `/rollcall/${cluster}/member/worker/w1`;
    const first = (await leaseOf(key))!;
    await raw.leaseClient.leaseRevoke({ ID: first });
    expect(await leaseOf(key)).toBeUndefined();
    const second = await waitFor(async () => {
      const lease = await leaseOf(key);
      return lease && lease !== first ? lease : undefined;
    }, 10_000, 'the member to come back on a new lease');
    expect(second).toMatch(/^[1-9]\d*$/);
  });
});
