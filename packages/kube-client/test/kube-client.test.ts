import { once } from 'node:events';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, PermissionError, type Logger } from '@rollcall/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_LINE_LENGTH, MAX_RESPONSE_BYTES } from '../src/client.js';
import { ApiClient, loadKubeConfig, ResourceInformer, statusError, transportError, type WatchedObject } from '../src/index.js';

const ctx = { verb: 'get', resource: 'pods', namespace: 'prod', name: 'p-1' };
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;

describe('statusError: an API answer onto Rollcall codes', () => {
  it.each([
    [401, undefined, ErrorCode.UNAUTHENTICATED],
    [403, undefined, ErrorCode.PERMISSION_DENIED],
    [404, undefined, ErrorCode.NOT_FOUND],
    [409, 'AlreadyExists', ErrorCode.ALREADY_EXISTS],
    [409, 'Conflict', ErrorCode.CONFLICT],
    [410, undefined, ErrorCode.REVISION_TOO_OLD],
    [413, undefined, ErrorCode.PAYLOAD_TOO_LARGE],
    [422, undefined, ErrorCode.INVALID_ARGUMENT],
    [500, undefined, ErrorCode.UNAVAILABLE],
  ] as const)('%i %s is %s, naming what was refused', (status, reason, code) => {
    const err = statusError(status, { reason, message: 'said the server' }, ctx);
    expect(err.code).toBe(code);
    expect(err.backend).toBe('kubernetes');
    expect(err.message).toContain('get pods p-1 in namespace prod');
  });

  it('a transport failure is UNAVAILABLE with its code', () => {
    const err = transportError(Object.assign(new Error('connect refused'), { code: 'ECONNREFUSED' }), ctx);
    expect(err.code).toBe(ErrorCode.UNAVAILABLE);
    expect(err.message).toContain('(ECONNREFUSED)');
  });
});

/** An API server of a few routes on 127.0.0.1. */
function fakeApiServer(route: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string }> {
  const server = createServer(route);
  server.listen(0, '127.0.0.1');
  return once(server, 'listening').then(() => ({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
}

describe('against a local API server', () => {
  let dir: string;
  let server: Server | undefined;
  let client: ApiClient | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rollcall-kube-client-'));
  });
  afterEach(async () => {
    client?.close();
    server?.closeAllConnections();
    if (server) await new Promise((resolve) => server!.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const kubeconfigFor = (url: string) => {
    const file = join(dir, 'kubeconfig');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'local', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'me', user: { token: 'secret-token' } }],
        contexts: [{ name: 'local', context: { cluster: 'local', user: 'me', namespace: 'prod' } }],
        'current-context': 'local',
      }),
    );
    return file;
  };

  it('loadKubeConfig: a context the kubeconfig lacks is INVALID_CONFIG naming the key', () => {
    const kubeconfig = kubeconfigFor('http://127.0.0.1:9');
    expect(() => loadKubeConfig({ kubeconfig, context: 'elsewhere' })).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_CONFIG, key: 'registry.kubernetes.context' }));
  });

  /** Writes `total` characters of `fill` in 1 MiB pieces, then `tail`, honouring back-pressure. */
  async function writeLong(res: ServerResponse, total: number, fill: string, tail = ''): Promise<void> {
    const piece = fill.repeat(1024 * 1024);
    for (let sent = 0; sent < total; sent += piece.length) {
      if (res.destroyed) return;
      if (!res.write(piece.slice(0, Math.min(piece.length, total - sent)))) await once(res, 'drain').catch(() => undefined);
    }
    res.end(tail);
  }

  it('request: an answer over MAX_RESPONSE_BYTES is UNAVAILABLE, not held in memory', async () => {
    ({ server } = await fakeApiServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      void writeLong(res, MAX_RESPONSE_BYTES + 1024 * 1024, ' ', '{}');
    }));
    client = new ApiClient(loadKubeConfig({ kubeconfig: kubeconfigFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`) }), 60_000, 'rollcall/test (me)');
    const err = await client.request({ method: 'GET', path: '/api/v1/namespaces/prod/pods', context: ctx }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCode.UNAVAILABLE });
    expect((err as Error).message).toContain(`the answer is over ${MAX_RESPONSE_BYTES} bytes`);
  });

  it('stream: a log line without a newline is passed on in pieces of MAX_LINE_LENGTH; a watch event that long ends the watch', async () => {
    ({ server } = await fakeApiServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      if (req.url!.includes('/log')) void writeLong(res, 2 * MAX_LINE_LENGTH + 5, 'x', '\nlast\n');
      else void writeLong(res, MAX_LINE_LENGTH + 5, ' ');
    }));
    client = new ApiClient(loadKubeConfig({ kubeconfig: kubeconfigFor(`http://127.0.0.1:${(server.address() as AddressInfo).port}`) }), 60_000, 'rollcall/test (me)');
    const lengths: number[] = [];
    const logEnded = new Promise<Error | undefined>((resolve) => {
      void client!.stream('/api/v1/namespaces/prod/pods/p-1/log', ctx, { line: (l) => void lengths.push((l as string).length), end: resolve }, 'text');
    });
    expect(await logEnded).toBeUndefined();
    expect(lengths).toEqual([MAX_LINE_LENGTH, MAX_LINE_LENGTH, 5, 4]);
    const watchEnded = new Promise<Error | undefined>((resolve) => {
      void client!.stream('/api/v1/namespaces/prod/pods?watch=1', ctx, { line: () => undefined, end: resolve });
    });
    expect((await watchEnded)?.message).toBe(`a watch event over ${MAX_LINE_LENGTH} characters`);
  });

  it('request: a CA rotated under a running client is used for the next connection (the keep-alive agent is not frozen)', async () => {
    // Two CAs, each with a certificate for 127.0.0.1, made with the openssl the test environment's PKI uses.
    const pki = (name: string) => {
      const ca = join(dir, `${name}-ca`);
      const leaf = join(dir, `${name}-leaf`);
      execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${ca}.key`, '-out', `${ca}.pem`, '-days', '1', '-subj', `/CN=${name}-ca`]);
      execFileSync('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${leaf}.key`, '-out', `${leaf}.csr`, '-subj', '/CN=127.0.0.1']);
      writeFileSync(`${leaf}.ext`, 'subjectAltName=IP:127.0.0.1\n');
      execFileSync('openssl', ['x509', '-req', '-in', `${leaf}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${leaf}.pem`, '-days', '1', '-extfile', `${leaf}.ext`]);
      return { ca: readFileSync(`${ca}.pem`), cert: readFileSync(`${leaf}.pem`), key: readFileSync(`${leaf}.key`) };
    };
    const first = pki('first');
    const second = pki('second');
    const tls = createHttpsServer({ cert: first.cert, key: first.key }, (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    tls.listen(0, '127.0.0.1');
    await once(tls, 'listening');
    try {
      const caFile = join(dir, 'ca.pem');
      writeFileSync(caFile, first.ca);
      const file = join(dir, 'kubeconfig-tls');
      const url = `https://127.0.0.1:${(tls.address() as AddressInfo).port}`;
      writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster: { server: url, 'certificate-authority': caFile } }], users: [{ name: 'u', user: { token: 't' } }], contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }], 'current-context': 'x' }));
      client = new ApiClient(loadKubeConfig({ kubeconfig: file }), 5_000, 'rollcall/test (me)');
      await expect(client.request({ method: 'GET', path: '/version', context: ctx })).resolves.toEqual({ ok: true });
      // The server's certificate and the CA file rotate together; open connections end, as a restart would end them.
      tls.setSecureContext({ cert: second.cert, key: second.key });
      tls.closeAllConnections();
      writeFileSync(caFile, second.ca);
      await expect(client.request({ method: 'GET', path: '/version', context: ctx })).resolves.toEqual({ ok: true });
    } finally {
      tls.closeAllConnections();
      await new Promise((resolve) => tls.close(resolve));
    }
  });

  it('request: a kubeconfig token-file rotated under a running client is sent from the next request', async () => {
    const seen: (string | undefined)[] = [];
    ({ server } = await fakeApiServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    }));
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'first-token\n');
    const file = join(dir, 'kubeconfig-token-file');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster: { server: url, 'insecure-skip-tls-verify': true } }], users: [{ name: 'u', user: { 'token-file': tokenFile } }], contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }], 'current-context': 'x' }));
    client = new ApiClient(loadKubeConfig({ kubeconfig: file }), 5_000, 'rollcall/test (me)');
    await client.request({ method: 'GET', path: '/version', context: ctx });
    writeFileSync(tokenFile, 'rotated-token\n');
    await client.request({ method: 'GET', path: '/version', context: ctx });
    await client.request({ method: 'GET', path: '/version', context: ctx });
    // the same length rewritten in place (only the modification time moves), then a new file renamed over it (a projected volume's swap)
    writeFileSync(tokenFile, 'rotated-tokeN\n');
    await client.request({ method: 'GET', path: '/version', context: ctx });
    writeFileSync(`${tokenFile}.new`, 'swapped-token\n');
    renameSync(`${tokenFile}.new`, tokenFile);
    await client.request({ method: 'GET', path: '/version', context: ctx });
    expect(seen).toEqual(['Bearer first-token', 'Bearer rotated-token', 'Bearer rotated-token', 'Bearer rotated-tokeN', 'Bearer swapped-token']);
  });

  it('request: the body of a 2xx, the credentials and user agent sent; a 403 is PERMISSION_DENIED without the token', async () => {
    const seen: { auth?: string; agent?: string }[] = [];
    ({ server } = await fakeApiServer((req, res) => {
      seen.push({ auth: req.headers.authorization, agent: req.headers['user-agent'] });
      if (req.url === '/api/v1/namespaces/prod/pods/p-1') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ metadata: { name: 'p-1' } }));
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: 403, message: 'forbidden' }));
    }));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    client = new ApiClient(loadKubeConfig({ kubeconfig: kubeconfigFor(url) }), 5_000, 'rollcall/test (me)');
    await expect(client.request({ method: 'GET', path: '/api/v1/namespaces/prod/pods/p-1', context: ctx })).resolves.toEqual({ metadata: { name: 'p-1' } });
    const refused = await client.request({ method: 'GET', path: '/api/v1/namespaces/prod/pods/p-2', context: { ...ctx, name: 'p-2' } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PermissionError);
    expect((refused as PermissionError).code).toBe(ErrorCode.PERMISSION_DENIED);
    expect((refused as Error).message).not.toContain('secret-token');
    expect(seen).toEqual([
      { auth: 'Bearer secret-token', agent: 'rollcall/test (me)' },
      { auth: 'Bearer secret-token', agent: 'rollcall/test (me)' },
    ]);
  });

  it('ResourceInformer: lists, then follows the watch from the list resourceVersion', async () => {
    let watchQuery: URLSearchParams | undefined;
    ({ server } = await fakeApiServer((req, res) => {
      const url = new URL(req.url!, 'http://x');
      res.writeHead(200, { 'content-type': 'application/json' });
      if (url.searchParams.get('watch') !== '1' && url.searchParams.get('watch') !== 'true') {
        return res.end(JSON.stringify({ metadata: { resourceVersion: '7' }, items: [{ metadata: { name: 'a', resourceVersion: '5' } }] }));
      }
      watchQuery = url.searchParams;
      // one event, then the stream stays open as a watch does
      res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'b', resourceVersion: '8' } } }) + '\n');
    }));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    client = new ApiClient(loadKubeConfig({ kubeconfig: kubeconfigFor(url) }), 5_000, 'rollcall/test (me)');
    const upserts: string[] = [];
    let sawB!: () => void;
    const bSeen = new Promise<void>((resolve) => (sawB = resolve));
    const informer = new ResourceInformer<WatchedObject>(
      { client, logger: quiet, path: '/api/v1/namespaces/prod/pods', labelSelector: 'app=x', resource: 'pods', namespace: 'prod', silenceTimeoutMs: 30_000, timeoutSeconds: 60 },
      {
        upsert: (o) => {
          upserts.push(o.metadata.name);
          if (o.metadata.name === 'b') sawB();
        },
        delete: () => {},
      },
    );
    try {
      await informer.start();
      await bSeen;
      expect(upserts).toEqual(['a', 'b']);
      expect(watchQuery?.get('resourceVersion')).toBe('7');
      expect(watchQuery?.get('labelSelector')).toBe('app=x');
      expect(informer.list().map((o) => o.metadata.name).sort()).toEqual(['a', 'b']);
    } finally {
      informer.close();
    }
  });
});
