import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { rejection, uniqueCluster } from '@rollcall/conformance';
import { createEtcdStore } from '../src/index.js';
import { makeTestPki, type TestPki } from './support/certs.js';
import { etcdEndpoints } from './support/etcd.js';
import { tlsTerminatingProxy } from './support/tls-proxy.js';

// The test environment's etcd speaks plain HTTP: a TLS-terminating proxy in front of it (a sidecar) makes
// every byte between the client and the proxy TLS, with the CA and client certificate the client is configured with.
let pki: TestPki;
let mutual: { endpoint: string; close(): Promise<void> };
let serverOnly: { endpoint: string; close(): Promise<void> };

beforeAll(async () => {
  pki = makeTestPki();
  const pem = { key: readFileSync(pki.serverKeyFile), cert: readFileSync(pki.serverCertFile), ca: readFileSync(pki.caFile) };
  mutual = await tlsTerminatingProxy(etcdEndpoints()[0]!, pem, true);
  serverOnly = await tlsTerminatingProxy(etcdEndpoints()[0]!, pem, false);
});
afterAll(async () => {
  await mutual?.close();
  await serverOnly?.close();
  if (pki) rmSync(pki.dir, { recursive: true, force: true });
});

describe('TLS', () => {
  it('with the CA, a client certificate and key, a registry works end to end over TLS', async () => {
    const registry = await createRegistry({
      type: 'etcd',
      cluster: uniqueCluster('tls'),
      etcd: { endpoints: [mutual.endpoint], tls: { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile } },
    });
    try {
      await registry.announce({ role: 'worker', id: 'w1', payload: { tls: true } });
      expect(await registry.campaign('scheduler').whenElected()).toBeGreaterThan(0);
      expect((await registryStore(registry).get('member/worker/w1'))?.record.payload).toEqual({ tls: true });
    } finally {
      await registry.close();
    }
  });

  it('with the CA only, against a server that does not ask for a client certificate', async () => {
    const store = await createEtcdStore({ cluster: uniqueCluster('tls'), endpoints: [serverOnly.endpoint], tls: { caFile: pki.caFile } });
    try {
      expect((await store.list('')).records).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('TLS against the plain-HTTP etcd fails connect with UNAVAILABLE within the dial timeout', async () => {
    const https = etcdEndpoints().map((e) => e.replace('http:', 'https:'));
    const started = performance.now();
    const err = await rejection(createEtcdStore({ endpoints: https, tls: { caFile: pki.caFile }, dialTimeoutMs: 2000 }));
    expect(err.code).toBe('UNAVAILABLE');
    expect(performance.now() - started).toBeLessThan(2000 + 3000);
  });

  it('without the client certificate the server requires, connect fails UNAVAILABLE', async () => {
    const err = await rejection(createEtcdStore({ endpoints: [mutual.endpoint], tls: { caFile: pki.caFile }, dialTimeoutMs: 3000 }));
    expect(err.code).toBe('UNAVAILABLE');
  });

  it('trusting another CA than the server certificate’s, connect fails UNAVAILABLE', async () => {
    const err = await rejection(createEtcdStore({ endpoints: [serverOnly.endpoint], tls: { caFile: pki.otherCaFile }, dialTimeoutMs: 3000 }));
    expect(err.code).toBe('UNAVAILABLE');
  });

  it('a client certificate file that is missing is INVALID_CONFIG naming its key', async () => {
    const err = await rejection(createEtcdStore({ endpoints: [mutual.endpoint], tls: { caFile: pki.caFile, certFile: pki.clientKeyFile + '.missing', keyFile: pki.clientKeyFile } }));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.etcd.tls.certFile');
  });

  it('a client key that does not match its certificate is INVALID_CONFIG, before connecting', async () => {
    const err = await rejection(createEtcdStore({ endpoints: [mutual.endpoint], tls: { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.serverKeyFile } }));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.etcd.tls');
    expect(err.message).toContain('key values mismatch');
  });

  for (const [key, file] of [
    ['caFile', 'garbage.pem'],
    ['certFile', 'client.key'],
    ['keyFile', 'client.pem'],
  ] as const) {
    it(`a ${key} that does not hold the right PEM is INVALID_CONFIG naming it, before connecting`, async () => {
      writeFileSync(join(pki.dir, 'garbage.pem'), 'not a certificate\n');
      const tls = { caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile, [key]: join(pki.dir, file) };
      const err = await rejection(createEtcdStore({ endpoints: [mutual.endpoint], tls }));
      expect(err.code).toBe('INVALID_CONFIG');
      expect(err.key).toBe(`registry.etcd.tls.${key}`);
      expect(err.message).toMatch(/is not a PEM (certificate|private key)/);
    });
  }
});
