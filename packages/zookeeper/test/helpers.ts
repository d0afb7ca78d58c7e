import zookeeper from 'node-zookeeper-client';
import type { ACL, Client, Stat } from 'node-zookeeper-client';
import { requireTestEnv } from '@rollcall/tools/testenv';
import { createZookeeperStore, type CreateZookeeperStoreOptions, type ZookeeperStore } from '../src/index.js';

export const standalone = () => requireTestEnv('zookeeper').connectString;
export const ensemble = () => requireTestEnv('zookeeperEnsemble').connectString;

/** Stores opened by a test file, closed by `closeAll()` in afterEach. */
export function storeFactory() {
  const opened: ZookeeperStore[] = [];
  return {
    async open(options: CreateZookeeperStoreOptions & { cluster: string }): Promise<ZookeeperStore> {
      const store = await createZookeeperStore({ connectString: standalone(), sessionTimeoutMs: 4000, connectTimeoutMs: 5000, requestTimeoutMs: 2000, openAcl: !(options as { auth?: unknown }).auth, ...options });
      opened.push(store);
      return store;
    },
    async closeAll(): Promise<void> {
      await Promise.allSettled(opened.splice(0).map((s) => s.close()));
    },
  };
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
