import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of one server, so a test can cut one
 * client off (every connection reset, new ones refused at once) and heal it,
 * while every other client stays connected.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private cut = false;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = createServer((client) => {
      if (!proxy || proxy.cut) {
        client.resetAndDestroy();
        return;
      }
      const upstream = connect(target.port, target.host);
      const pair = [client, upstream];
      for (const s of pair) {
        proxy.sockets.add(s);
        s.on('error', () => pair.forEach((p) => p.destroy()));
        s.on('close', () => {
          proxy?.sockets.delete(s);
          pair.forEach((p) => p.destroy());
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => server.listen(0, '127.0.0.1', resolve).once('error', reject));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('proxy has no port');
    proxy = new TcpProxy(server, address.port);
    return proxy;
  }

  /** Resets every open connection and refuses new ones until `heal()`. */
  partition(): void {
    this.cut = true;
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
  }

  heal(): void {
    this.cut = false;
  }

  async close(): Promise<void> {
    this.partition();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
