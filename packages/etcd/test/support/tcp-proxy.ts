import { createServer, connect, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';

/**
 * A TCP proxy in front of one etcd endpoint, so a test can cut one client off
 * (a partition) while every other client stays connected.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<[Socket, Socket]>();
  private cut = false;
  private frozen = false;

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
  ) {}

  /** Listens on a free loopback port and forwards to `target` (`http://host:port`). */
  static async start(target: string): Promise<TcpProxy> {
    const { hostname, port } = new URL(target);
    let proxy!: TcpProxy;
    const server = createServer((client) => {
      if (proxy.cut) return void client.destroy();
      proxy.track(client);
      // A frozen proxy accepts and then says nothing, like a network that drops every packet.
      if (proxy.frozen) return void client.on('error', () => {});
      const upstream = connect(Number(port), hostname);
      proxy.track(upstream);
      const pair: [Socket, Socket] = [client, upstream];
      proxy.pairs.add(pair);
      client.on('close', () => proxy.pairs.delete(pair));
      client.pipe(upstream).pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('proxy has no port');
    proxy = new TcpProxy(server, `http://127.0.0.1:${address.port}`);
    return proxy;
  }

  /** Drops every connection and refuses new ones until `heal`. */
  partition(): void {
    this.cut = true;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  heal(): void {
    this.cut = false;
  }

  /** Stops forwarding in both directions without closing anything: packets vanish, nobody is told. */
  freeze(): void {
    this.frozen = true;
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  async close(): Promise<void> {
    this.partition();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  }
}

/** A TCP server that accepts connections and never answers: an endpoint that hangs. */
export async function silentServer(): Promise<{ endpoint: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('server has no port');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * TLS in front of the plain test etcd, as a TLS-terminating sidecar would be:
 * clients speak gRPC over TLS (client certificate required when `requireClientCert`),
 * the proxy forwards the plaintext to etcd.
 */
export async function tlsTerminatingProxy(target: string, pem: { key: Buffer; cert: Buffer; ca: Buffer }, requireClientCert: boolean): Promise<{ endpoint: string; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const server = createTlsServer({ key: pem.key, cert: pem.cert, ca: pem.ca, requestCert: requireClientCert, rejectUnauthorized: requireClientCert, ALPNProtocols: ['h2'] }, (client) => {
    const upstream = connect(Number(port), hostname);
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('proxy has no port');
  return {
    endpoint: `https://127.0.0.1:${address.port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
