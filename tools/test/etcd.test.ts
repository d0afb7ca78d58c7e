import { describe, expect, it } from 'vitest';
import { Etcd3, EtcdPermissionDeniedError, type IKeyValue } from 'etcd3';
import { readTestEnv } from '@rollcall/tools/testenv';

describe('etcd', () => {
  it('delivers a put to a watcher', async () => {
    const client = new Etcd3({ hosts: readTestEnv().etcd!.endpoints });
    const key = `/smoke/${process.pid}/${Date.now()}`;
    try {
      const watcher = await client.watch().key(key).create();
      const seen = new Promise<IKeyValue>((resolve) => watcher.once('put', resolve));
      await client.put(key).value('hello');
      const kv = await seen;
      expect(kv.value.toString()).toBe('hello');
      await watcher.cancel();
    } finally {
      client.close();
    }
  });
});

describe('etcd-auth', () => {
  it('lets the limited user write only under its prefix, and refuses a wrong password', async () => {
    const { etcdAuth } = readTestEnv();
    const auth = etcdAuth!;
    const limited = new Etcd3({ hosts: auth.endpoints, auth: { username: auth.limited.user, password: auth.limited.password } });
    const root = new Etcd3({ hosts: auth.endpoints, auth: { username: auth.root.user, password: auth.root.password } });
    const intruder = new Etcd3({ hosts: auth.endpoints, auth: { username: auth.limited.user, password: 'wrong' } });
    try {
      const inside = `${auth.limited.prefix}smoke-${Date.now()}`;
      await limited.put(inside).value('ok');
      expect(await root.get(inside).string()).toBe('ok');

      await expect(limited.put(`/outside-${Date.now()}`).value('no')).rejects.toBeInstanceOf(EtcdPermissionDeniedError);
      await expect(intruder.get(inside).string()).rejects.toThrow(/authentication failed|invalid user ID or password/i);
    } finally {
      limited.close();
      root.close();
      intruder.close();
    }
  });
});
