import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * How a cut proxy treats connections, as three kinds of broken network:
 *
 * - `reset`: open connections are reset (RST) and new ones are reset as soon
 *   as they are accepted — the peer is told at once, as by a crashed host.
 * - `blackhole`: open connections stay open but every byte either way is
 *   dropped; new connections are accepted and their bytes dropped too. Nobody
 *   is told: only a timeout notices. `heal()` closes them (their streams lost
 *   bytes), so clients reconnect through fresh ones.
 * - `stall`: open connections stay open and nothing is forwarded, but nothing
 *   is lost either (reads pause; TCP holds the bytes back); new connections are
 *   accepted and hang. `heal()` resumes them: the held bytes arrive late.
 */
export type TcpFault = 'reset' | 'blackhole' | 'stall';

/** Which connections a `cut` affects. */
export interface TcpCutOptions {
  /**
   * `all` (default): the open connections and every new one until `heal()`.
   * `open`: only the connections open now; new ones are forwarded as usual
   * (a stream that dies alone while the network works, e.g. a silent watch).
   */
  scope?: 'all' | 'open';
}

/** Where a proxy forwards to: `{ host, port }`, `host:port`, or a URL with a port (`http://127.0.0.1:2379`). */
export type TcpTarget = { host: string; port: number } | string;

/** One accepted connection and its upstream (none while black-holed or stalled since accept). */
interface Link {
  readonly client: Socket;
  upstream: Socket | undefined;
  state: 'forwarding' | TcpFault;
}

/**
 * A TCP proxy on 127.0.0.1 in front of one server, so a test can cut one
 * client off (`cut(mode)`) and `heal()` it while every other client keeps its
 * own connections. Bytes pass through untouched (TLS included).
 */
export class TcpProxy {
  /** Always 127.0.0.1. */
  readonly host = '127.0.0.1';
  private readonly links = new Set<Link>();
  /** What happens to a connection accepted now. */
  private incoming: 'forwarding' | TcpFault = 'forwarding';
  private readonly target: { host: string; port: number };

  private constructor(
    private readonly server: Server,
    target: TcpTarget,
  ) {
    this.target = parseTarget(target);
  }

  /** Listens on a free port of 127.0.0.1 and forwards to `target`. */
  static async start(target: TcpTarget): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server, target);
    server.on('connection', (client) => proxy.accept(client));
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** `127.0.0.1:<port>`, for a connect string; `http://${proxy.address}` for a URL. */
  get address(): string {
    return `${this.host}:${this.port}`;
  }

  /** Connections open through the proxy now (forwarding or cut). */
  get connections(): number {
    return this.links.size;
  }

  /** Breaks the connections as `mode` says (see TcpFault), until `heal()`. */
  cut(mode: TcpFault, options: TcpCutOptions = {}): void {
    if ((options.scope ?? 'all') === 'all') this.incoming = mode;
    for (const link of [...this.links]) this.apply(link, mode);
  }

  /** Forwards again: new connections go through, stalled ones resume, black-holed ones are closed. */
  heal(): void {
    this.incoming = 'forwarding';
    for (const link of [...this.links]) {
      if (link.state === 'blackhole') this.drop(link, false);
      else if (link.state === 'stall') this.forward(link);
    }
  }

  /** Closes every connection and stops listening. */
  async close(): Promise<void> {
    for (const link of [...this.links]) this.drop(link, false);
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    if (this.incoming === 'reset') {
      client.on('error', () => {});
      client.resetAndDestroy();
      return;
    }
    // No Nagle: small request/response packets (ZooKeeper's) would otherwise wait for delayed ACKs.
    client.setNoDelay(true);
    const link: Link = { client, upstream: undefined, state: 'forwarding' };
    this.links.add(link);
    client.on('error', () => this.drop(link, false));
    client.on('close', () => this.drop(link, false));
    if (this.incoming === 'forwarding') this.forward(link);
    else this.apply(link, this.incoming);
  }

  /** Connects upstream if not yet connected, and pipes both ways. */
  private forward(link: Link): void {
    link.state = 'forwarding';
    if (!link.upstream) {
      const upstream = connect(this.target.port, this.target.host);
      upstream.setNoDelay(true);
      upstream.on('error', () => this.drop(link, false));
      upstream.on('close', () => this.drop(link, false));
      link.upstream = upstream;
    }
    link.client.pipe(link.upstream);
    link.upstream.pipe(link.client);
  }

  private apply(link: Link, mode: TcpFault): void {
    if (mode === 'reset') return this.drop(link, true);
    // A black-holed stream has lost bytes: it can only be closed, never resumed.
    if (link.state === 'blackhole') return;
    link.client.unpipe();
    link.upstream?.unpipe();
    link.state = mode;
    if (mode === 'blackhole') {
      // Keep reading, so the sender never feels backpressure, and throw the bytes away.
      for (const socket of [link.client, link.upstream]) socket?.on('data', discard).resume();
    } else {
      link.client.pause();
      link.upstream?.pause();
    }
  }

  private drop(link: Link, reset: boolean): void {
    if (!this.links.delete(link)) return;
    for (const socket of [link.client, link.upstream]) {
      if (!socket || socket.destroyed) continue;
      if (reset) socket.resetAndDestroy();
      else socket.destroy();
    }
  }
}

function discard(): void {}

function parseTarget(target: TcpTarget): { host: string; port: number } {
  if (typeof target !== 'string') return target;
  const url = new URL(target.includes('://') ? target : `tcp://${target}`);
  if (!url.port) throw new Error(`a proxy target needs a port: ${target}`);
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port) };
}

/** Several proxies cut and healed together, e.g. one per server of a ZooKeeper connect string. */
export class TcpProxyGroup {
  private constructor(readonly proxies: readonly TcpProxy[]) {}

  /** One proxy per target, in order. */
  static async start(targets: readonly TcpTarget[]): Promise<TcpProxyGroup> {
    return new TcpProxyGroup(await Promise.all(targets.map((t) => TcpProxy.start(t))));
  }

  /** `127.0.0.1:<port>` of each proxy, comma-separated: a connect string through them. */
  get connectString(): string {
    return this.proxies.map((p) => p.address).join(',');
  }

  cut(mode: TcpFault, options?: TcpCutOptions): void {
    for (const p of this.proxies) p.cut(mode, options);
  }

  heal(): void {
    for (const p of this.proxies) p.heal();
  }

  async close(): Promise<void> {
    await Promise.all(this.proxies.map((p) => p.close()));
  }
}
