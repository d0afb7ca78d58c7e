import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type RegistryError } from '@rollcall/core';
import type { StoreSessionState } from '@rollcall/core/spi';
import { leaseRecord, rejection, uniqueCluster, waitFor } from '@rollcall/conformance';
import { requireTestEnv, TcpProxy } from '@rollcall/tools/testenv';
import { createZookeeperStore, type CreateZookeeperStoreOptions } from '../src/index.js';
import { rawClient, standalone, storeFactory } from './helpers.js';

const tlsEnv = () => requireTestEnv('zookeeper').tls;
/** TLS as the testenv's secureClientPort wants it: its CA, and a client certificate (it requires one). */
const tls = () => ({ enabled: true, caFile: tlsEnv().caFile, certFile: tlsEnv().certFile, keyFile: tlsEnv().keyFile });

const stores = storeFactory();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await stores.closeAll();
  await Promise.allSettled(closers.splice(0).map((close) => close()));
});

function capturingLogger() {
  const lines: string[] = [];
  const log = (fields: unknown, message?: string) => lines.push(JSON.stringify(fields) + ' ' + (message ?? ''));
  return { lines, logger: { debug: log, info: log, warn: log, error: log } };
}

/** A TCP relay that keeps every byte the client sent: what anyone on the path would read. */
async function wiretap(target: { host: string; port: number }): Promise<{ address: string; sent: () => Buffer }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target);
    sockets.add(client).add(upstream);
    client.on('data', (chunk: Buffer) => chunks.push(chunk));
    client.pipe(upstream).pipe(client);
    const end = () => (client.destroy(), upstream.destroy());
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { port } = server.address() as { port: number };
  return { address: `127.0.0.1:${port}`, sent: () => Buffer.concat(chunks) };
}

describe('TLS to the secureClientPort', () => {
  it('a registry works over TLS with a client certificate, and neither the digest password nor a payload crosses the wire in clear (as both do on the plain port)', async () => {
    const auth = { username: 'tls-owner', password: `pw-${randomBytes(8).toString('hex')}` };
    const payload = `payload-${randomBytes(6).toString('hex')}`;
    const cluster = uniqueCluster('tls');
    const secure = await wiretap({ host: '127.0.0.1', port: tlsEnv().port });
    const plain = await wiretap({ host: '127.0.0.1', port: requireTestEnv('zookeeper').port });
    const registries = [];
    try {
      for (const [name, config] of [
        ['tls', { connectString: secure.address, auth, tls: tls() }],
        ['plain', { connectString: plain.address, auth }],
      ] as const) {
        const registry = await createRegistry({ type: 'zookeeper', cluster, zookeeper: config });
        registries.push(registry);
        await registry.announce({ role: 'worker', id: `w-${name}`, payload: { payload } });
        const lock = await registry.lock(`deploy-${name}`, { timeoutMs: 10_000 });
        await lock.release();
      }
      // Each sees the other's member: one server, two transports.
      for (const registry of registries) expect((await registry.members('worker')).map((m) => m.id).sort()).toEqual(['w-plain', 'w-tls']);
    } finally {
      await Promise.all(registries.map((r) => r.close()));
    }
    expect(secure.sent().length).toBeGreaterThan(1000);
    expect(secure.sent().includes(auth.password)).toBe(false);
    expect(secure.sent().includes(payload)).toBe(false);
    // The same check catches the plain port: there, both are readable on the wire.
    expect(plain.sent().includes(auth.password)).toBe(true);
    expect(plain.sent().includes(payload)).toBe(true);
  });

  it('a certificate signed by another CA is refused at once: INVALID_CONFIG naming tls.caFile, the server and the cause, no secret in any message or log line', async () => {
    const auth = { username: 'tls-wrong-ca', password: `pw-${randomBytes(8).toString('hex')}` };
    const { lines, logger } = capturingLogger();
    const started = performance.now();
    const err = await rejection(
      createZookeeperStore({ cluster: 'never', connectString: tlsEnv().connectString, auth, connectTimeoutMs: 20_000, logger, tls: { ...tls(), caFile: tlsEnv().wrongCaFile } } as CreateZookeeperStoreOptions),
    );
    // Long before connectTimeoutMs: a certificate that does not verify is configuration, not an outage.
    expect(performance.now() - started).toBeLessThan(5000);
    expect(err).toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.zookeeper.tls.caFile', backend: 'zookeeper' });
    expect(err.message).toBe(`[rollcall] [zookeeper] registry.zookeeper.tls.caFile: the TLS certificate of ZooKeeper at ${tlsEnv().connectString} was not trusted (UNABLE_TO_VERIFY_LEAF_SIGNATURE)`);
    for (const text of [...lines, err.message, JSON.stringify(err), String(err.stack)]) expect(text).not.toContain(auth.password);
  });

  it('a certificate that does not name the server is refused: INVALID_CONFIG naming tls.servername', async () => {
    const err = await rejection(createZookeeperStore({ cluster: 'never', connectString: tlsEnv().connectString, openAcl: true, tls: { ...tls(), servername: 'zk.example.org' } }));
    expect(err).toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.zookeeper.tls.servername' });
    expect(err.message).toContain('ERR_TLS_CERT_ALTNAME_INVALID');
    // the right name is accepted: the server's certificate carries localhost
    const store = await stores.open({ cluster: uniqueCluster('sni'), connectString: tlsEnv().connectString, tls: { ...tls(), servername: 'localhost' } });
    await store.create('lock/x', leaseRecord('a'));
  });

  it('rejectUnauthorized=false connects to a server it cannot verify, with a warning naming the key at connect', async () => {
    const { lines, logger } = capturingLogger();
    const store = await stores.open({ cluster: uniqueCluster('unverified'), connectString: tlsEnv().connectString, logger, tls: { ...tls(), caFile: tlsEnv().wrongCaFile, rejectUnauthorized: false } });
    await store.create('lock/x', leaseRecord('a'));
    const warnings = lines.filter((l) => l.includes('registry.zookeeper.tls.rejectUnauthorized=false'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('anyone on the path can pose as the server');
    // verified TLS says nothing of the kind
    const quiet = capturingLogger();
    await stores.open({ cluster: uniqueCluster('verified'), connectString: tlsEnv().connectString, logger: quiet.logger, tls: tls() });
    expect(quiet.lines.filter((l) => l.includes('rejectUnauthorized'))).toEqual([]);
  });

  it('TLS to a plain port, or plain to the TLS port, fails UNAVAILABLE within connectTimeoutMs', async () => {
    for (const options of [
      { connectString: standalone(), tls: tls() },
      { connectString: tlsEnv().connectString },
    ]) {
      const err = await rejection(createZookeeperStore({ cluster: 'never', openAcl: true, connectTimeoutMs: 1000, ...options }));
      expect(err.code, JSON.stringify(options)).toBe('UNAVAILABLE');
      expect(err.message).toContain('within 1000 ms');
    }
  });

  it('a connection reset is reconnected over TLS, on the same session', async () => {
    const proxy = await TcpProxy.start(tlsEnv().connectString);
    closers.push(() => proxy.close());
    const store = await stores.open({ cluster: uniqueCluster('tls-reset'), connectString: proxy.address, sessionTimeoutMs: 6000, tls: tls() });
    const states: StoreSessionState[] = [];
    store.onSessionState((s) => states.push(s));
    const session = store.session.sessionId;
    proxy.cut('reset');
    await waitFor(() => states[0] === 'suspended', 5000, 'suspended');
    proxy.heal();
    await waitFor(() => store.session.connected, 6000, 'connected again');
    expect(store.session.sessionId).toBe(session);
    expect(states).toEqual(['suspended', 'connected']);
    const created = await store.create('lock/after', leaseRecord('a'));
    expect((await store.get('lock/after'))?.version).toBe(created.version);
  });

  it('bad TLS configuration fails INVALID_CONFIG naming the key, before anything is contacted', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ caFile: '/x' }, 'registry.zookeeper.tls.caFile'],
      [{ enabled: true, certFile: '/x' }, 'registry.zookeeper.tls.keyFile'],
      [{ enabled: true, keyFile: '/x' }, 'registry.zookeeper.tls.certFile'],
      [{ enabled: true, caFile: '' }, 'registry.zookeeper.tls.caFile'],
      [{ enabled: true, caFile: '/nonexistent/ca.pem' }, 'registry.zookeeper.tls.caFile'],
      [{ enabled: 'yes' }, 'registry.zookeeper.tls.enabled'],
    ];
    for (const [tlsOptions, key] of cases) {
      const err = await rejection(createRegistry({ type: 'zookeeper', cluster: 'c', zookeeper: { connectString: '127.0.0.1:1', openAcl: true, tls: tlsOptions } } as never));
      expect((err as RegistryError).code, JSON.stringify(tlsOptions)).toBe('INVALID_CONFIG');
      expect(err.key, JSON.stringify(tlsOptions)).toBe(key);
    }
  });
});

// The raw client of the other tests speaks plain ZooKeeper; keep it linked so a TLS store's records are checked by an independent reader too.
it('records written over TLS are the same znodes a plain client reads', async () => {
  const cluster = uniqueCluster('tls-raw');
  const store = await stores.open({ cluster, connectString: tlsEnv().connectString, tls: tls() });
  await store.create('lock/deploy', leaseRecord('holder-1'));
  const raw = await rawClient(standalone());
  try {
    expect(JSON.parse((await raw.getData(`/rollcall/${cluster}/lock%2Fdeploy`)).data.toString('utf8')).record.holderIdentity).toBe('holder-1');
  } finally {
    raw.close();
  }
});
