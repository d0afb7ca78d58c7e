import { createServer } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { configFromEnv, createRegistry, envName, type Registry } from '@rollcall/core';
import { createEtcdStore, etcdOptions, registryPlugin } from '../src/index.js';
import { rejection, uniqueCluster } from '@rollcall/conformance';
import { TcpProxy } from '@rollcall/tools/testenv';
import { etcdEndpoints, rawClient } from './support/etcd.js';

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.allSettled(opened.splice(0).map((o) => o.close()));
});

async function registry(config: Record<string, unknown>): Promise<Registry> {
  const r = await createRegistry(config as never);
  opened.push(r);
  return r;
}

/** Keys a refused configuration must not have written anywhere under the default prefix. */
async function keysUnder(prefix: string): Promise<string[]> {
  const raw = rawClient();
  try {
    return await raw.getAll().prefix(prefix).keys();
  } finally {
    raw.close();
  }
}

describe('configuration', () => {
  it('the object, flat and environment forms are equivalent', async () => {
    const cluster = uniqueCluster('forms');
    const endpoints = etcdEndpoints();
    const fromObject = await registry({ type: 'etcd', cluster, etcd: { endpoints, prefix: '/forms-test', dialTimeoutMs: 3000 } });
    const fromFlat = await registry({ 'registry.type': 'etcd', 'registry.cluster': cluster, 'registry.etcd.endpoints': endpoints.join(','), 'registry.etcd.prefix': '/forms-test', 'registry.etcd.dialTimeoutMs': '3000' });
    const env = {
      REGISTRY_TYPE: 'etcd',
      REGISTRY_CLUSTER: cluster,
      REGISTRY_ETCD_ENDPOINTS: endpoints.join(','),
      REGISTRY_ETCD_PREFIX: '/forms-test',
      REGISTRY_ETCD_DIAL_TIMEOUT_MS: '3000',
    };
    const fromEnv = await registry(configFromEnv(env) as never);
    for (const r of [fromObject, fromFlat, fromEnv]) {
      expect(r.config.options).toEqual({ endpoints, prefix: '/forms-test', dialTimeoutMs: 3000, keepaliveIntervalMs: 10_000, maxPayloadBytes: 1024 * 1024, memberLeaseSeconds: 0, allowPlaintextCredentials: false });
    }
    await fromObject.announce({ role: 'worker', id: 'w1' });
    expect(await keysUnder(`/forms-test/${cluster}/`)).toEqual([`/forms-test/${cluster}/member/worker/w1`]);
  });

  it('every key has a doc and an environment name', () => {
    for (const [key, spec] of Object.entries(etcdOptions)) {
      expect(spec.doc.length, key).toBeGreaterThan(10);
      expect(envName(`registry.etcd.${key}`)).toMatch(/^REGISTRY_ETCD_[A-Z_]+$/);
    }
    expect(etcdOptions.password).toMatchObject({ secret: true });
  });

  const cases: [string, Record<string, unknown>, string][] = [
    ['an endpoint that is not a URL', { endpoints: ['127.0.0.1:2379'] }, 'registry.etcd.endpoints'],
    ['an endpoint of another scheme', { endpoints: ['ftp://127.0.0.1:2379'] }, 'registry.etcd.endpoints'],
    ['an endpoint without a port', { endpoints: ['http://127.0.0.1'] }, 'registry.etcd.endpoints'],
    ['an endpoint with a path', { endpoints: ['http://127.0.0.1:2379/v3'] }, 'registry.etcd.endpoints'],
    ['an endpoint with credentials', { endpoints: ['http://root:pw@127.0.0.1:2379'] }, 'registry.etcd.endpoints'],
    ['no endpoint', { endpoints: [] }, 'registry.etcd.endpoints'],
    ['endpoints of mixed schemes', { endpoints: ['http://127.0.0.1:2379', 'https://127.0.0.1:2380'] }, 'registry.etcd.endpoints'],
    ['endpoints that are not strings', { endpoints: [2379] }, 'registry.etcd.endpoints'],
    ['a prefix without a leading slash', { prefix: 'rollcall' }, 'registry.etcd.prefix'],
    ['a prefix with a trailing slash', { prefix: '/rollcall/' }, 'registry.etcd.prefix'],
    ['the root prefix', { prefix: '/' }, 'registry.etcd.prefix'],
    ['a prefix with an empty segment', { prefix: '/a//b' }, 'registry.etcd.prefix'],
    ['a username without a password', { username: 'alice' }, 'registry.etcd.password'],
    ['a password without a username', { password: 'hunter2-secret' }, 'registry.etcd.username'],
    ['an empty username', { username: '', password: 'x' }, 'registry.etcd.username'],
    ['credentials to http:// endpoints, not allowed in clear', { username: 'alice', password: 'hunter2-secret' }, 'registry.etcd.allowPlaintextCredentials'],
    ['a client certificate without its key', { endpoints: ['https://127.0.0.1:2379'], tls: { certFile: '/c.pem' } }, 'registry.etcd.tls.keyFile'],
    ['a client key without its certificate', { endpoints: ['https://127.0.0.1:2379'], tls: { keyFile: '/k.pem' } }, 'registry.etcd.tls.certFile'],
    ['TLS files with http:// endpoints', { tls: { caFile: '/ca.pem' } }, 'registry.etcd.tls.caFile'],
    ['a zero dial timeout', { dialTimeoutMs: 0 }, 'registry.etcd.dialTimeoutMs'],
    ['a dial timeout that is not an integer', { dialTimeoutMs: 'soon' }, 'registry.etcd.dialTimeoutMs'],
    ['a keepalive etcd would refuse', { keepaliveIntervalMs: 1000 }, 'registry.etcd.keepaliveIntervalMs'],
    ['a negative member lease', { memberLeaseSeconds: -1 }, 'registry.etcd.memberLeaseSeconds'],
    ['a payload limit beyond the server default', { maxPayloadBytes: 2 * 1024 * 1024 }, 'registry.etcd.maxPayloadBytes'],
    ['an unknown key', { hosts: ['http://127.0.0.1:2379'] }, 'registry.etcd.hosts'],
  ];

  for (const [what, etcd, key] of cases) {
    it(`${what} is INVALID_CONFIG naming ${key}, before anything is contacted`, async () => {
      const cluster = uniqueCluster('bad');
      const viaRegistry = await rejection(createRegistry({ type: 'etcd', cluster, etcd } as never));
      expect(viaRegistry.code).toBe('INVALID_CONFIG');
      expect(viaRegistry.key).toBe(key);
      const viaFactory = await rejection(createEtcdStore({ cluster, ...etcd } as never));
      expect(viaFactory.code).toBe('INVALID_CONFIG');
      expect(viaFactory.key).toBe(key);
      expect(viaRegistry.message + viaFactory.message).not.toContain('hunter2-secret');
      expect(await keysUnder(`/rollcall/${cluster}/`)).toEqual([]);
    });
  }

  it('a password is never shown, even in the error about itself', async () => {
    const err = await rejection(createRegistry({ 'registry.type': 'etcd', 'registry.etcd.username': 'u', 'registry.etcd.password': 42 } as never));
    expect(err.code).toBe('INVALID_CONFIG');
    const other = await rejection(createRegistry({ type: 'etcd', etcd: { username: 'u', password: 'hunter2-secret', dialTimeoutMs: -5 } } as never));
    expect(other.key).toBe('registry.etcd.dialTimeoutMs');
    expect(JSON.stringify({ m: other.message, s: other.stack })).not.toContain('hunter2-secret');
  });

  it('a TLS file that cannot be read is INVALID_CONFIG naming its key', async () => {
    const missing = join(tmpdir(), `rollcall-etcd-missing-${process.pid}`, 'nope.pem');
    const err = await rejection(createRegistry({ type: 'etcd', etcd: { endpoints: ['https://127.0.0.1:2379'], tls: { caFile: missing } } }));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.etcd.tls.caFile');
    expect(err.message).toContain(missing);
  });
});

describe('unreachable endpoints', () => {
  it('a refused endpoint fails connect with UNAVAILABLE within the dial timeout, naming the endpoint and the refusal (not a timeout)', async () => {
    const started = performance.now();
    const err = await rejection(createRegistry({ type: 'etcd', etcd: { endpoints: ['http://127.0.0.1:1'], dialTimeoutMs: 1500 } }));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toMatch(/^\[rollcall\] \[etcd\] could not connect to etcd at http:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
    expect(err.message).not.toMatch(/within|Resolution note/);
    expect(performance.now() - started).toBeLessThan(1500 + 3000);
  });

  it('an endpoint that accepts and never answers fails connect with UNAVAILABLE at the dial timeout, not a hang', async () => {
    // A stalled proxy accepts connections and never answers.
    const silent = await TcpProxy.start(etcdEndpoints()[0]!);
    silent.cut('stall');
    opened.push(silent);
    const endpoint = `http://${silent.address}`;
    const started = performance.now();
    const err = await rejection(createEtcdStore({ endpoints: [endpoint], dialTimeoutMs: 1000 }));
    const elapsed = performance.now() - started;
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toContain(`could not connect to etcd at ${endpoint} within 1000 ms`);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(1000 + 3000);
  });

  it('an HTTP/2 server that is not etcd fails connect with UNAVAILABLE saying so', async () => {
    const server = createServer((_req, res) => void res.writeHead(404).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    opened.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    const port = (server.address() as { port: number }).port;
    const err = await rejection(createEtcdStore({ endpoints: [`http://127.0.0.1:${port}`], dialTimeoutMs: 2000 }));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toContain('not an etcd v3 endpoint');
  });

  it('with one endpoint down and one up, connect and every call go to the live one', async () => {
    const store = await createEtcdStore({ cluster: uniqueCluster('failover'), endpoints: ['http://127.0.0.1:1', ...etcdEndpoints()], dialTimeoutMs: 3000 });
    opened.push(store);
    // Enough calls that the shuffled order starts with the dead endpoint many times.
    for (let i = 0; i < 20; i++) await store.create(`lock/l${i}`, { holderIdentity: 'x', leaseDurationSeconds: 5, acquireTime: null, renewTime: null, leaseTransitions: 0 });
    expect((await store.list('lock/')).records).toHaveLength(20);
  });

  it('the plugin declares its type and validates cross-key rules', () => {
    expect(registryPlugin.type).toBe('etcd');
    expect(registryPlugin.validate?.({ endpoints: [], prefix: '/r', dialTimeoutMs: 1, keepaliveIntervalMs: 5000, maxPayloadBytes: 1, memberLeaseSeconds: 0, allowPlaintextCredentials: false })).toEqual({ key: 'endpoints', rule: 'needs at least one endpoint' });
  });
});
