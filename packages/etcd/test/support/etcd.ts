import etcd3 from 'etcd3';
import { readTestEnv } from '@rollcall/tools/testenv';
import type { RecordStore } from '@rollcall/core/spi';
import { createEtcdStore, type CreateEtcdStoreOptions, type EtcdStore } from '../../src/index.js';

export function etcdEndpoints(): string[] {
  const env = readTestEnv().etcd;
  if (!env) throw new Error('etcd is not up: the vitest global setup should have started it');
  return env.endpoints;
}

export function etcdAuthEnv() {
  const env = readTestEnv().etcdAuth;
  if (!env) throw new Error('etcd-auth is not up: the vitest global setup should have started it');
  return env;
}

/** A plain etcd3 client on the test etcd, for writing by hand and compacting. */
export function rawClient(endpoints = etcdEndpoints()): InstanceType<typeof etcd3.Etcd3> {
  return new etcd3.Etcd3({ hosts: endpoints });
}

/** Compacts the test etcd's history up to its current revision. */
export async function compactNow(client: InstanceType<typeof etcd3.Etcd3>): Promise<string> {
  const { header } = await client.kv.range({ key: Buffer.from('/'), limit: 1, keys_only: true });
  await client.kv.compact({ revision: header.revision, physical: true });
  return header.revision;
}

/** Opens stores and closes them all at the end of the case. */
export class Stores {
  private readonly opened: RecordStore[] = [];

  async open(options: CreateEtcdStoreOptions): Promise<EtcdStore> {
    const store = await createEtcdStore({ endpoints: etcdEndpoints(), requestTimeoutMs: 3000, ...options });
    this.opened.push(store);
    return store;
  }

  async closeAll(): Promise<void> {
    await Promise.allSettled(this.opened.splice(0).map((s) => s.close()));
  }
}
