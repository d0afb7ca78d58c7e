import { TcpProxy, type TcpFault, type TcpTarget } from './tcp-proxy.js';

/**
 * One proxy per client of a test file, so that any one client can be cut off
 * alone while the others keep their connections — what the conformance suite's
 * `partition` / `heal` capabilities need:
 *
 * ```ts
 * const proxies = new ClientProxies(etcdEndpoints()[0]!, 'reset');
 * openStore: (cluster) => proxies.open((proxy) => createEtcdStore({ cluster, endpoints: [`http://${proxy.address}`] })),
 * capabilities: { partition: (store) => proxies.cut(store), heal: (store) => proxies.heal(store) },
 * ```
 */
export class ClientProxies {
  private readonly byClient = new WeakMap<object, TcpProxy>();
  private readonly opened: TcpProxy[] = [];

  /** Every proxy forwards to `target`; `cut(client)` breaks the client's connections as `mode` says. */
  constructor(
    private readonly target: TcpTarget,
    private readonly mode: TcpFault,
  ) {}

  /** Starts a proxy, opens a client through it with `connect`, and remembers which proxy serves that client. */
  async open<C extends object>(connect: (proxy: TcpProxy) => Promise<C>): Promise<C> {
    const proxy = await TcpProxy.start(this.target);
    this.opened.push(proxy);
    const client = await connect(proxy);
    this.byClient.set(client, proxy);
    return client;
  }

  /** Cuts this client off (the mode given at construction). */
  cut(client: object): void {
    this.proxyOf(client).cut(this.mode);
  }

  /** Reconnects this client. */
  heal(client: object): void {
    this.proxyOf(client).heal();
  }

  /** Closes every proxy opened so far. */
  async close(): Promise<void> {
    await Promise.allSettled(this.opened.splice(0).map((p) => p.close()));
  }

  private proxyOf(client: object): TcpProxy {
    const proxy = this.byClient.get(client);
    if (!proxy) throw new Error('this client was not opened through these proxies');
    return proxy;
  }
}
