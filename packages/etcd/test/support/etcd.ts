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

/** A plain etcd3 client on the test etcd, for writing and reading by hand. */
export function rawClient(endpoints = etcdEndpoints()): InstanceType<typeof etcd3.Etcd3> {
  return new etcd3.Etcd3({ hosts: endpoints });
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
