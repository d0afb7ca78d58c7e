import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of one ZooKeeper server, so a test can cut one
 * client off while every other client stays connected. `blackhole` keeps the
 * sockets open and drops every byte (a silent partition: the library stays
 * "connected"); `reset` closes them and refuses new ones.
 */
export class TcpProxy {
  private mode: 'open' | 'blackhole' | 'reset' = 'open';
  private readonly pairs = new Set<{ client: Socket; upstream: Socket | undefined }>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    let proxy!: TcpProxy;
    const server = createServer((client) => proxy.accept(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('the proxy has no port');
    proxy = new TcpProxy(server, address.port, target);
    return proxy;
  }

  /** `127.0.0.1:<port>` of the proxy. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get connections(): number {
    return this.pairs.size;
  }

  cut(mode: 'blackhole' | 'reset'): void {
    this.mode = mode;
    if (mode === 'reset') for (const pair of [...this.pairs]) this.drop(pair);
  }

  /** Back to forwarding; connections held in a blackhole are closed, so the client reconnects through a fresh one. */
  heal(): void {
    const wasBlackhole = this.mode === 'blackhole';
    this.mode = 'open';
    if (wasBlackhole) for (const pair of [...this.pairs]) this.drop(pair);
  }

  async close(): Promise<void> {
    for (const pair of [...this.pairs]) this.drop(pair);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    if (this.mode === 'reset') {
      client.destroy();
      return;
    }
    // No Nagle: ZooKeeper's small request/response packets would otherwise wait for delayed ACKs (tens of ms).
    client.setNoDelay(true);
    const pair: { client: Socket; upstream: Socket | undefined } = { client, upstream: undefined };
    this.pairs.add(pair);
    client.on('error', () => this.drop(pair));
    client.on('close', () => this.drop(pair));
    if (this.mode === 'blackhole') {
      client.on('data', () => {});
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    upstream.setNoDelay(true);
    pair.upstream = upstream;
    upstream.on('error', () => this.drop(pair));
    upstream.on('close', () => this.drop(pair));
    client.on('data', (chunk) => this.mode === 'open' && upstream.write(chunk));
    upstream.on('data', (chunk) => this.mode === 'open' && client.write(chunk));
  }

  private drop(pair: { client: Socket; upstream: Socket | undefined }): void {
    if (!this.pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream?.destroy();
  }
}

/** One proxy per server of a connect string (`host:port,...`), and the connect string through them. */
export async function proxyAll(connectString: string): Promise<{ proxies: TcpProxy[]; connectString: string; cut(mode: 'blackhole' | 'reset'): void; heal(): void; close(): Promise<void> }> {
  const proxies = await Promise.all(
    connectString.split(',').map((hp) => {
      const [host, port] = hp.split(':');
      return TcpProxy.start({ host: host!, port: Number(port) });
    }),
  );
  return {
    proxies,
    connectString: proxies.map((p) => p.address).join(','),
    cut: (mode) => proxies.forEach((p) => p.cut(mode)),
    heal: () => proxies.forEach((p) => p.heal()),
    close: async () => {
      await Promise.all(proxies.map((p) => p.close()));
    },
  };
}
