import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { observeFor, waitFor } from '@rollcall/conformance';
import { ClientProxies, TcpProxy, TcpProxyGroup } from '@rollcall/tools/testenv';

/** How long an event may take on loopback, milliseconds. */
const BOUND_MS = 5000;
/** The window in which bytes must NOT pass a cut proxy, milliseconds. */
const QUIET_MS = 300;

/** An echo server that keeps what each connection sent it. */
async function echoServer(): Promise<{ server: Server; port: number; received: string[]; closed: boolean[] }> {
  const received: string[] = [];
  const closed: boolean[] = [];
  const server = createServer((socket) => {
    const index = received.push('') - 1;
    closed.push(false);
    socket.on('data', (chunk) => {
      received[index] += chunk.toString();
      socket.write(chunk);
    });
    socket.on('error', () => {});
    socket.on('close', () => (closed[index] = true));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, received, closed };
}

/** A client connection that keeps what it received and how it ended. */
function client(port: number): { socket: Socket; received: () => string; connected: () => boolean; ended: () => string | undefined } {
  let received = '';
  let connected = false;
  let ended: string | undefined;
  const socket = connect(port, '127.0.0.1');
  socket.on('connect', () => (connected = true));
  socket.on('data', (chunk) => (received += chunk.toString()));
  socket.on('error', (error: NodeJS.ErrnoException) => (ended ??= error.code ?? error.message));
  socket.on('close', () => (ended ??= 'closed'));
  return { socket, received: () => received, connected: () => connected, ended: () => ended };
}

const servers: Server[] = [];
const closers: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function setup() {
  const echo = await echoServer();
  servers.push(echo.server);
  const proxy = await TcpProxy.start({ host: '127.0.0.1', port: echo.port });
  closers.push(() => proxy.close());
  return { echo, proxy };
}

async function echoed(c: ReturnType<typeof client>, text: string, what: string): Promise<void> {
  const before = c.received();
  c.socket.write(text);
  await waitFor(() => c.received() === before + text, BOUND_MS, what);
}

describe('TcpProxy', () => {
  it('forwards both ways, and parses host:port and URL targets', async () => {
    const { echo, proxy } = await setup();
    expect(proxy.address).toBe(`127.0.0.1:${proxy.port}`);
    const c = client(proxy.port);
    await echoed(c, 'hello', 'the echo through the proxy');
    expect(proxy.connections).toBe(1);
    for (const target of [`127.0.0.1:${echo.port}`, `http://127.0.0.1:${echo.port}`]) {
      const other = await TcpProxy.start(target);
      closers.push(() => other.close());
      await echoed(client(other.port), 'x', `the echo through a proxy to ${target}`);
    }
  });

  it('reset: open connections are reset, new ones are reset at once; after heal new ones forward', async () => {
    const { echo, proxy } = await setup();
    const open = client(proxy.port);
    await echoed(open, 'a', 'the first echo');
    proxy.cut('reset');
    await waitFor(() => open.ended() !== undefined, BOUND_MS, 'the open connection to be reset');
    expect(open.ended()).toBe('ECONNRESET');
    await waitFor(() => echo.closed[0] === true, BOUND_MS, 'the upstream connection to close');
    const refused = client(proxy.port);
    await waitFor(() => refused.ended() !== undefined, BOUND_MS, 'a new connection to be reset');
    expect(refused.received()).toBe('');
    expect(echo.received).toEqual(['a']);
    proxy.heal();
    await echoed(client(proxy.port), 'b', 'the echo after heal');
  });

  it('blackhole: open and new connections stay open and bytes vanish; heal closes them, and new ones forward', async () => {
    const { echo, proxy } = await setup();
    const open = client(proxy.port);
    await echoed(open, 'a', 'the first echo');
    proxy.cut('blackhole');
    open.socket.write('lost');
    const late = client(proxy.port);
    await waitFor(late.connected, BOUND_MS, 'a new connection to be accepted');
    late.socket.write('lost too');
    await observeFor(QUIET_MS);
    expect([open.received(), late.received(), open.ended(), late.ended()]).toEqual(['a', '', undefined, undefined]);
    expect(echo.received).toEqual(['a']);
    expect(proxy.connections).toBe(2);
    proxy.heal();
    await waitFor(() => open.ended() !== undefined && late.ended() !== undefined, BOUND_MS, 'heal to close the black-holed connections');
    await waitFor(() => echo.closed[0] === true, BOUND_MS, 'the upstream connection to close');
    expect(echo.received).toEqual(['a']);
    await echoed(client(proxy.port), 'b', 'the echo after heal');
  });

  it('stall: open connections hold their bytes and new ones hang; heal delivers everything late', async () => {
    const { echo, proxy } = await setup();
    const open = client(proxy.port);
    await echoed(open, 'a', 'the first echo');
    proxy.cut('stall');
    open.socket.write('b');
    const late = client(proxy.port);
    await waitFor(late.connected, BOUND_MS, 'a new connection to be accepted');
    late.socket.write('c');
    await observeFor(QUIET_MS);
    expect([open.received(), late.received(), open.ended(), late.ended()]).toEqual(['a', '', undefined, undefined]);
    expect(echo.received).toEqual(['a']);
    proxy.heal();
    await waitFor(() => open.received() === 'ab' && late.received() === 'c', BOUND_MS, 'the held bytes to arrive after heal');
    expect(echo.received).toEqual(['ab', 'c']);
  });

  it("stall with scope 'open': the open connection goes silent while new connections forward", async () => {
    const { proxy } = await setup();
    const open = client(proxy.port);
    await echoed(open, 'a', 'the first echo');
    proxy.cut('stall', { scope: 'open' });
    open.socket.write('b');
    await echoed(client(proxy.port), 'fresh', 'the echo on a new connection');
    await observeFor(QUIET_MS);
    expect(open.received()).toBe('a');
    proxy.heal();
    await waitFor(() => open.received() === 'ab', BOUND_MS, 'the stalled connection to resume');
  });

  it('a group cuts and heals every proxy, and names them in a connect string', async () => {
    const [one, two] = [await echoServer(), await echoServer()];
    servers.push(one.server, two.server);
    const group = await TcpProxyGroup.start([`127.0.0.1:${one.port}`, { host: '127.0.0.1', port: two.port }]);
    closers.push(() => group.close());
    expect(group.connectString).toBe(group.proxies.map((p) => `127.0.0.1:${p.port}`).join(','));
    group.cut('reset');
    const refused = group.proxies.map((p) => client(p.port));
    await waitFor(() => refused.every((c) => c.ended() !== undefined), BOUND_MS, 'every proxy to reset');
    group.heal();
    for (const p of group.proxies) await echoed(client(p.port), 'ok', `the echo through ${p.address}`);
  });

  it('ClientProxies: one proxy per client, cut and healed by the client alone', async () => {
    const echo = await echoServer();
    servers.push(echo.server);
    const proxies = new ClientProxies({ host: '127.0.0.1', port: echo.port }, 'reset');
    closers.push(() => proxies.close());
    const [a, b] = await Promise.all([1, 2].map(() => proxies.open(async (proxy) => ({ c: client(proxy.port) }))));
    await echoed(a!.c, 'a', 'the echo to a');
    await echoed(b!.c, 'b', 'the echo to b');
    proxies.cut(a!);
    await waitFor(() => a!.c.ended() === 'ECONNRESET', BOUND_MS, 'a to be reset');
    await echoed(b!.c, 'still', 'b, not cut, to echo');
    proxies.heal(a!);
    expect(() => proxies.cut({})).toThrow('not opened through these proxies');
  });
});
