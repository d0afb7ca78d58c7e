import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import zookeeper from 'node-zookeeper-client';
import type { ACL, Client, Stat } from 'node-zookeeper-client';
import type { JsonValue, RegistryError } from '@rollcall/core';
import { formatMicroTime, type LeaseRecord, type WatchEvent, type WatchSubscription } from '@rollcall/core/spi';
import { requireTestEnv } from '@rollcall/tools/testenv';
import { createZookeeperStore, type CreateZookeeperStoreOptions, type ZookeeperStore } from '../src/index.js';

export const standalone = () => requireTestEnv('zookeeper').connectString;
export const ensemble = () => requireTestEnv('zookeeperEnsemble').connectString;

/** A fresh cluster name (DNS-1123 label) per case. */
export function uniqueCluster(purpose: string): string {
  return `zk-${purpose}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`.slice(0, 63).replace(/-+$/, '');
}

export function record(holderIdentity: string, payload?: JsonValue, leaseTransitions = 0): LeaseRecord {
  const now = formatMicroTime(new Date());
  return { holderIdentity, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions, ...(payload === undefined ? {} : { payload }) };
}

/** Stores opened by a test file, closed by `closeAll()` in afterEach. */
export function storeFactory() {
  const opened: ZookeeperStore[] = [];
  return {
    async open(options: CreateZookeeperStoreOptions & { cluster: string }): Promise<ZookeeperStore> {
      const store = await createZookeeperStore({ connectString: standalone(), sessionTimeoutMs: 4000, connectTimeoutMs: 5000, requestTimeoutMs: 2000, ...options });
      opened.push(store);
      return store;
    },
    async closeAll(): Promise<void> {
      await Promise.allSettled(opened.splice(0).map((s) => s.close()));
    },
  };
}

/** A watch whose events are kept; `until` waits (bounded) for a matching one. */
export function collect(store: ZookeeperStore, prefix: string, from: string) {
  const events: WatchEvent[] = [];
  let error: RegistryError | undefined;
  const waiters = new Set<() => void>();
  const wake = () => waiters.forEach((w) => w());
  const sub: WatchSubscription = store.watch(prefix, from, {
    event: (e) => {
      events.push(e);
      wake();
    },
    error: (e) => {
      error = e;
      wake();
    },
  });
  const waitUntil = (check: () => boolean, timeoutMs: number, what: string) =>
    new Promise<void>((resolve, reject) => {
      if (check()) return resolve();
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; saw ${JSON.stringify(events.map(describe))}${error ? `, error ${error.code}` : ''}`));
      }, timeoutMs);
      const waiter = () => {
        if (!check()) return;
        clearTimeout(timer);
        waiters.delete(waiter);
        resolve();
      };
      waiters.add(waiter);
    });
  return {
    events,
    get error() {
      return error;
    },
    until: (match: (e: WatchEvent) => boolean, timeoutMs = 5000) => waitUntil(() => events.some(match), timeoutMs, 'a matching event'),
    ended: async (timeoutMs = 5000) => {
      await waitUntil(() => error !== undefined, timeoutMs, 'the watch to end');
      return error!;
    },
    close: () => sub.close(),
  };
}

export function describe(e: WatchEvent): string {
  if (e.type === 'put') return `put ${e.record.key} ${e.record.record.holderIdentity}`;
  if (e.type === 'delete') return `delete ${e.key}`;
  if (e.type === 'corrupt') return `corrupt ${e.entry.key}`;
  return 'progress';
}

/** A plain node-zookeeper-client session, for editing znodes by hand as an operator would. */
export async function rawClient(connectString: string, auth?: { username: string; password: string }): Promise<RawClient> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 10_000, spinDelay: 200 });
  if (auth) client.addAuthInfo('digest', Buffer.from(`${auth.username}:${auth.password}`));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no session with ${connectString}`)), 10_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.connect();
  });
  return new RawClient(client);
}

export class RawClient {
  constructor(readonly client: Client) {}
  private p<T>(fn: (cb: (e: unknown, v?: T) => void) => void): Promise<T> {
    return new Promise((resolve, reject) => fn((e, v) => (e ? reject(e) : resolve(v as T))));
  }
  getData = (path: string) => this.p<{ data: Buffer; stat: Stat }>((cb) => this.client.getData(path, (e, data, stat) => cb(e, { data, stat })));
  setData = (path: string, data: string | Buffer) => this.p<Stat>((cb) => this.client.setData(path, Buffer.from(data), -1, cb));
  create = (path: string, data: string | Buffer = '') => this.p<string>((cb) => this.client.create(path, Buffer.from(data), cb));
  remove = (path: string) => this.p<void>((cb) => this.client.remove(path, -1, (e) => cb(e)));
  children = (path: string) => this.p<string[]>((cb) => this.client.getChildren(path, (e, c) => cb(e, c)));
  exists = (path: string) => this.p<Stat | null>((cb) => this.client.exists(path, (e, s) => cb(e, s)));
  getACL = (path: string) => this.p<ACL[]>((cb) => this.client.getACL(path, (e, acls) => cb(e, acls)));
  mkdirp = (path: string) => this.p<string>((cb) => this.client.mkdirp(path, cb));
  close(): void {
    this.client.close();
  }
}

/**
 * Waits (bounded) until every port can be bound again. A stopped server's
 * accepted sockets linger (FIN_WAIT) until each client has closed its end,
 * which on a loaded machine takes a while, and the test environment's
 * startServer() refuses a port that is still taken.
 */
export async function waitPortsFree(ports: number[], timeoutMs: number): Promise<void> {
  const bindable = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolve(true)));
    });
  const deadline = performance.now() + timeoutMs;
  while (!(await Promise.all(ports.map(bindable))).every(Boolean)) {
    if (performance.now() > deadline) throw new Error(`ports ${ports.join(', ')} still taken after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
