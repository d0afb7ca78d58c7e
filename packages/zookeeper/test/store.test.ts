import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry, type RegistryError } from '@rollcall/core';
import { collectWatch, describeEvent, leaseRecord, rejection, uniqueCluster, waitFor } from '@rollcall/conformance';
import { TcpProxy } from '@rollcall/tools/testenv';
import { createZookeeperStore, ZookeeperStore, encodeKey, decodeKey } from '../src/index.js';
import { versionOf } from '../src/revisions.js';
import { rawClient, standalone, storeFactory } from './helpers.js';

const stores = storeFactory();
afterEach(() => stores.closeAll());

describe('record keys and znode names', () => {
  it('encodes every key into one reversible child name, slashes included', () => {
    expect(encodeKey('member/worker/host-1:8080@a.b_c')).toBe('member%2Fworker%2Fhost-1:8080@a.b_c');
    for (const key of ['election/scheduler', 'lock/a.b', 'member/r/ü%/x', 'member/r/..']) {
      const name = encodeKey(key);
      expect(name).not.toContain('/');
      expect(decodeKey(name)).toBe(key);
    }
  });

  it('rejects child names the encoding never produces', () => {
    for (const name of ['garbage name', 'a%2f', '%ZZ', 'x/y', '', 'member%2F%C3']) expect(decodeKey(name)).toBeUndefined();
  });
});

describe('layout on the server', () => {
  it('keeps each record as one znode under /rollcall/<cluster>, named by its encoded key, holding the record as JSON', async () => {
    const cluster = uniqueCluster('layout');
    const store = await stores.open({ cluster });
    const created = await store.create('member/worker/w1', leaseRecord('w1', { cpu: 0.5 }));
    const raw = await rawClient(standalone());
    try {
      expect(await raw.children(`/rollcall/${cluster}`)).toEqual(['member%2Fworker%2Fw1']);
      const { data, stat } = await raw.getData(`/rollcall/${cluster}/member%2Fworker%2Fw1`);
      expect(JSON.parse(data.toString())).toEqual({ rollcall: 1, record: created.record });
      // The version is the znode's mzxid.
      expect(created.version).toBe(versionOf(stat.mzxid));
      const updated = await store.update('member/worker/w1', leaseRecord('w1', { cpu: 0.7 }), created.version);
      expect(updated.version).toBe(versionOf((await raw.getData(`/rollcall/${cluster}/member%2Fworker%2Fw1`)).stat.mzxid));
    } finally {
      raw.close();
    }
  });

  it('honours a configured root and a chroot in the connect string; clusters in other chroots never meet', async () => {
    const raw = await rawClient(standalone());
    const chrootA = `/chroot-${randomBytes(4).toString('hex')}`;
    const chrootB = `/chroot-${randomBytes(4).toString('hex')}`;
    try {
      await raw.create(chrootA);
      await raw.create(chrootB);
      const cluster = uniqueCluster('chroot');
      const a = await stores.open({ cluster, connectString: `${standalone()}${chrootA}`, root: '/apps/coordination' });
      const b = await stores.open({ cluster, connectString: `${standalone()}${chrootB}` });
      await a.create('election/e', leaseRecord('a'));
      expect(await raw.children(`${chrootA}/apps/coordination/${cluster}`)).toEqual(['election%2Fe']);
      expect(await raw.exists(`/rollcall/${cluster}`)).toBeNull();
      expect(await b.get('election/e')).toBeUndefined();
      await b.create('election/e', leaseRecord('b'));
      expect((await a.get('election/e'))?.record.holderIdentity).toBe('a');
      expect((await raw.getData(`${chrootB}/rollcall/${cluster}/election%2Fe`)).data.toString()).toContain('"holderIdentity":"b"');
    } finally {
      raw.close();
    }
  });

  it('refuses a cluster znode that declares another layout with SCHEMA_MISMATCH', async () => {
    const cluster = uniqueCluster('layout2');
    const raw = await rawClient(standalone());
    try {
      await raw.mkdirp(`/rollcall/${cluster}`);
      await raw.setData(`/rollcall/${cluster}`, JSON.stringify({ rollcallLayout: 2 }));
      const err = await rejection(stores.open({ cluster }));
      expect(err.code).toBe('SCHEMA_MISMATCH');
      expect(err.message).toMatch(/^\[rollcall\] \[zookeeper\] /);
    } finally {
      raw.close();
    }
  });
});

describe('records edited or deleted by hand', () => {
  it('a znode edited into garbage is a corrupt event, a list().corrupt entry and CORRUPT_RECORD on get; the watch goes on and CAS replaces it', async () => {
    const cluster = uniqueCluster('corrupt');
    const store = await stores.open({ cluster });
    await store.create('lock/l', leaseRecord('a'));
    const watch = collectWatch(store, '', (await store.list('')).revision);
    const raw = await rawClient(standalone());
    try {
      const stat = await raw.setData(`/rollcall/${cluster}/lock%2Fl`, '{not json');
      await watch.until((e) => e.type === 'corrupt');
      const corrupt = watch.events.find((e) => e.type === 'corrupt')!;
      expect(corrupt.type === 'corrupt' && corrupt.entry).toMatchObject({ key: 'lock/l', version: versionOf(stat.mzxid), error: { code: 'CORRUPT_RECORD' } });
      const list = await store.list('');
      expect(list.records).toEqual([]);
      expect(list.corrupt.map((c) => [c.key, c.version, c.error.code])).toEqual([['lock/l', versionOf(stat.mzxid), 'CORRUPT_RECORD']]);
      expect((await rejection(store.get('lock/l'))).code).toBe('CORRUPT_RECORD');
      // Valid JSON without the record's shape is corrupt too.
      await raw.setData(`/rollcall/${cluster}/lock%2Fl`, JSON.stringify({ rollcall: 1, record: { holderIdentity: 7 } }));
      await watch.until((e) => e.type === 'corrupt' && e.entry.version !== versionOf(stat.mzxid));
      const latest = (await store.list('')).corrupt[0]!;
      const replaced = await store.update('lock/l', leaseRecord('fixed'), latest.version);
      await watch.until((e) => e.type === 'put' && e.record.version === replaced.version);
      expect(watch.error).toBeUndefined();
      expect(watch.events.map(describeEvent)).toEqual(['corrupt lock/l', 'corrupt lock/l', 'put lock/l fixed']);
    } finally {
      raw.close();
      watch.close();
    }
  });

  it('a record deleted by hand is a delete event, and the watch sees later changes', async () => {
    const cluster = uniqueCluster('handdel');
    const store = await stores.open({ cluster });
    await store.create('member/worker/w1', leaseRecord('w1'));
    const watch = collectWatch(store, '', (await store.list('')).revision);
    const raw = await rawClient(standalone());
    try {
      await raw.remove(`/rollcall/${cluster}/member%2Fworker%2Fw1`);
      await watch.until((e) => e.type === 'delete');
      await store.create('member/worker/w1', leaseRecord('again'));
      await watch.until((e) => e.type === 'put');
      expect(watch.events.map(describeEvent)).toEqual(['delete member/worker/w1', 'put member/worker/w1 again']);
    } finally {
      raw.close();
      watch.close();
    }
  });

  it('a znode with a name Rollcall never writes is ignored by list and watch', async () => {
    const cluster = uniqueCluster('foreign');
    const store = await stores.open({ cluster });
    const watch = collectWatch(store, '', (await store.list('')).revision);
    const raw = await rawClient(standalone());
    try {
      await raw.create(`/rollcall/${cluster}/not a record`, 'hello');
      await store.create('lock/after', leaseRecord('after'));
      await watch.until((e) => e.type === 'put');
      expect(watch.events.map(describeEvent)).toEqual(['put lock/after after']);
      expect((await store.list('')).records.map((r) => r.key)).toEqual(['lock/after']);
    } finally {
      raw.close();
      watch.close();
    }
  });
});

describe('watch revisions', () => {
  it('a revision this store did not hand out ends the watch with REVISION_TOO_OLD, so the caller relists', async () => {
    const cluster = uniqueCluster('rev');
    const store = await stores.open({ cluster });
    const other = await stores.open({ cluster });
    const foreign = (await other.list('')).revision;
    for (const revision of [foreign, 'garbage', '']) {
      const watch = collectWatch(store, '', revision);
      expect((await watch.ended()).code).toBe('REVISION_TOO_OLD');
      expect(watch.events).toEqual([]);
    }
    // A list's revision for a narrower prefix cannot vouch for a wider watch.
    const narrow = (await store.list('lock/')).revision;
    expect((await collectWatch(store, '', narrow).ended()).code).toBe('REVISION_TOO_OLD');
  });

  it('revisions carry the zxid: they sort like the ensemble history and never repeat', async () => {
    const cluster = uniqueCluster('revorder');
    const store = await stores.open({ cluster });
    const first = (await store.list('')).revision;
    const watch = collectWatch(store, '', first);
    let current = await store.create('lock/l', leaseRecord('a'));
    for (let i = 0; i < 3; i++) current = await store.update('lock/l', leaseRecord(`a${i}`), current.version);
    await watch.until((e) => e.type === 'put' && e.record.version === current.version);
    watch.close();
    const revisions = [first, ...watch.events.map((e) => e.revision)];
    expect(new Set(revisions).size).toBe(revisions.length);
    const zxids = revisions.map((r) => BigInt(`0x${r.slice(0, 16)}`));
    for (let i = 1; i < zxids.length; i++) expect(zxids[i]! > zxids[i - 1]!).toBe(true);
  });

  it('resumed after its connection dropped, a watch emits exactly what changed meanwhile', async () => {
    const cluster = uniqueCluster('resume');
    const proxy = await TcpProxy.start(standalone());
    try {
      const watcher = await stores.open({ cluster, connectString: proxy.address, sessionTimeoutMs: 10_000 });
      const writer = await stores.open({ cluster });
      const gone = await writer.create('member/worker/gone', leaseRecord('gone'));
      const changes = await writer.create('member/worker/changes', leaseRecord('changes-1'));
      await writer.create('member/worker/stays', leaseRecord('stays'));
      const first = collectWatch(watcher, '', (await watcher.list('')).revision);
      const ping = await writer.create('lock/ping', leaseRecord('ping'));
      await first.until((e) => e.type === 'put' && e.record.key === 'lock/ping');
      const resumeFrom = first.events.at(-1)!.revision;
      proxy.cut('reset');
      expect((await first.ended()).code).toBe('UNAVAILABLE');
      await writer.delete('member/worker/gone', gone.version);
      await writer.update('member/worker/changes', leaseRecord('changes-2'), changes.version);
      await writer.create('member/worker/appears', leaseRecord('appears'));
      await writer.delete('lock/ping', ping.version);
      proxy.heal();
      await waitFor(() => watcher.session.connected, 10_000, 'the watcher to reconnect');
      const resumed = collectWatch(watcher, '', resumeFrom);
      await resumed.until((e) => e.type === 'put' && e.record.key === 'member/worker/appears');
      await resumed.until((e) => e.type === 'delete' && e.key === 'lock/ping');
      // A later change proves the watch is armed again, and that nothing else was emitted before it.
      await writer.create('lock/end', leaseRecord('end'));
      await resumed.until((e) => e.type === 'put' && e.record.key === 'lock/end');
      resumed.close();
      expect(resumed.events.map(describeEvent).slice(0, -1).sort()).toEqual(['delete lock/ping', 'delete member/worker/gone', 'put member/worker/appears appears', 'put member/worker/changes changes-2']);
      expect(resumed.events.map(describeEvent).at(-1)).toBe('put lock/end end');
    } finally {
      await stores.closeAll();
      await proxy.close();
    }
  });
});

describe('connecting', () => {
  it('an unreachable connect string fails UNAVAILABLE within connectTimeoutMs', async () => {
    const refused = await TcpProxy.start({ host: '127.0.0.1', port: 1 });
    refused.cut('reset');
    const silent = await TcpProxy.start(standalone());
    silent.cut('blackhole');
    try {
      for (const connectString of [refused.address, silent.address, `${refused.address},${silent.address}`]) {
        const started = performance.now();
        const err = await rejection(createZookeeperStore({ connectString, cluster: 'never', connectTimeoutMs: 1500, openAcl: true }));
        const elapsed = performance.now() - started;
        expect(err.code).toBe('UNAVAILABLE');
        expect(err.message).toContain('within 1500 ms');
        expect(elapsed).toBeGreaterThanOrEqual(1400);
        expect(elapsed).toBeLessThan(1500 + 1500);
      }
    } finally {
      await refused.close();
      await silent.close();
    }
  });

  it('a chroot that does not exist fails INVALID_CONFIG naming the connect string, and creates nothing', async () => {
    const chroot = `/missing-${randomBytes(4).toString('hex')}`;
    const err = await rejection(createZookeeperStore({ connectString: `${standalone()}${chroot}`, cluster: 'c', connectTimeoutMs: 5000, openAcl: true }));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.key).toBe('registry.zookeeper.connectString');
    expect(err.message).toContain(`the chroot ${chroot} does not exist`);
    const raw = await rawClient(standalone());
    try {
      expect(await raw.exists(chroot)).toBeNull();
    } finally {
      raw.close();
    }
  });

  it('bad configuration fails INVALID_CONFIG naming the key, before anything is contacted', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'registry.zookeeper.connectString'],
      [{ connectString: '' }, 'registry.zookeeper.connectString'],
      [{ connectString: 'localhost' }, 'registry.zookeeper.connectString'],
      [{ connectString: 'a:2181,,b:2181' }, 'registry.zookeeper.connectString'],
      [{ connectString: 'a:99999' }, 'registry.zookeeper.connectString'],
      [{ connectString: 'a:2181/chroot/' }, 'registry.zookeeper.connectString'],
      [{ connectString: 'a:2181/x//y' }, 'registry.zookeeper.connectString'],
      [{ connectString: 'a:2181', root: 'rollcall' }, 'registry.zookeeper.root'],
      [{ connectString: 'a:2181', root: '/' }, 'registry.zookeeper.root'],
      [{ connectString: 'a:2181', root: '/a/../b' }, 'registry.zookeeper.root'],
      [{ connectString: 'a:2181', sessionTimeoutMs: 10 }, 'registry.zookeeper.sessionTimeoutMs'],
      [{ connectString: 'a:2181', connectTimeoutMs: 'soon' }, 'registry.zookeeper.connectTimeoutMs'],
      [{ connectString: 'a:2181', auth: { username: 'u' } }, 'registry.zookeeper.auth.password'],
      [{ connectString: 'a:2181', auth: { password: 'p' } }, 'registry.zookeeper.auth.username'],
      [{ connectString: 'a:2181', auth: { username: 'u:x', password: 'p' } }, 'registry.zookeeper.auth.username'],
      [{ connectString: 'a:2181', tls: true }, 'registry.zookeeper.tls'],
      [{ connectString: 'a:2181' }, 'registry.zookeeper.openAcl'],
      [{ connectString: 'a:2181', auth: { username: 'u', password: 'p' }, openAcl: true }, 'registry.zookeeper.openAcl'],
    ];
    for (const [zookeeper, key] of cases) {
      // Port 1 of an unresolvable host: a store that tried to connect would fail UNAVAILABLE, not INVALID_CONFIG.
      const err = await rejection(createRegistry({ type: 'zookeeper', cluster: 'c', zookeeper } as never));
      expect(err.code, JSON.stringify(zookeeper)).toBe('INVALID_CONFIG');
      expect(err.key, JSON.stringify(zookeeper)).toBe(key);
    }
  });

  it('without auth, a registry that writes needs openAcl by name (its znodes would be open to anyone); a read-only one does not', async () => {
    const err = await rejection(createRegistry({ type: 'zookeeper', cluster: 'c', zookeeper: { connectString: standalone() } }));
    expect(err).toMatchObject({ code: 'INVALID_CONFIG', key: 'registry.zookeeper.openAcl' });
    expect(err.message).toContain('world:anyone ALL');
    const cluster = uniqueCluster('reader');
    const writer = await createRegistry({ type: 'zookeeper', cluster, zookeeper: { connectString: standalone(), openAcl: true } });
    await writer.announce({ role: 'worker', id: 'w1' });
    const reader = await createRegistry({ type: 'zookeeper', cluster, readOnly: true, zookeeper: { connectString: standalone() } });
    expect((await reader.members('worker')).map((m) => m.id)).toEqual(['w1']);
    await reader.close();
    await writer.close();
  });

  it('the flat and environment forms configure the same store', async () => {
    const cluster = uniqueCluster('forms');
    const flat = await createRegistry({ 'registry.type': 'zookeeper', 'registry.cluster': cluster, 'registry.zookeeper.connectString': standalone(), 'registry.zookeeper.root': '/rollcall-forms', 'registry.zookeeper.openAcl': 'true' });
    try {
      await flat.announce({ role: 'worker', id: 'w1' });
      const raw = await rawClient(standalone());
      try {
        expect(await raw.children(`/rollcall-forms/${cluster}`)).toEqual(['member%2Fworker%2Fw1']);
      } finally {
        raw.close();
      }
    } finally {
      await flat.close();
    }
  });
});

describe('digest authentication and ACLs', () => {
  const owner = { username: 'owner', password: `secret-${randomBytes(6).toString('hex')}` };
  const intruder = { username: 'owner', password: 'not-the-password' };

  it('created znodes carry only the digest identity; other identities can neither change them nor open the cluster', async () => {
    const cluster = uniqueCluster('acl');
    const mine = await stores.open({ cluster, auth: owner });
    const created = await mine.create('lock/l', leaseRecord('a'));
    const path = `/rollcall/${cluster}/lock%2Fl`;
    const anonymous = await rawClient(standalone());
    const wrongPassword = await rawClient(standalone(), intruder);
    const ownerClient = await rawClient(standalone(), owner);
    try {
      for (const p of [path, `/rollcall/${cluster}`]) {
        const acls = await ownerClient.getACL(p);
        // The library's ACL objects carry `permission`, not the `perms` its type declarations name.
        expect(acls.map((a) => [a.id.scheme, (a as unknown as { permission: number }).permission])).toEqual([['digest', 31]]);
        expect(acls[0]!.id.id.startsWith('owner:')).toBe(true);
        expect(acls[0]!.id.id).not.toContain(owner.password);
      }
      for (const other of [anonymous, wrongPassword]) {
        await expect(other.setData(path, 'garbage')).rejects.toMatchObject({ code: -102 });
        await expect(other.remove(path)).rejects.toMatchObject({ code: -102 });
        await expect(other.create(`/rollcall/${cluster}/lock%2Fnew`, 'x')).rejects.toMatchObject({ code: -102 });
        await expect(other.getData(path)).rejects.toMatchObject({ code: -102 });
      }
      for (const auth of [intruder, undefined]) {
        const err = await rejection(stores.open({ cluster, auth }));
        expect(err.code).toBe('PERMISSION_DENIED');
        expect(err.message).toContain(`/rollcall/${cluster}`);
      }
      expect(await mine.get('lock/l')).toEqual(created);
      expect((await mine.list('')).records).toEqual([created]);
    } finally {
      anonymous.close();
      wrongPassword.close();
      ownerClient.close();
    }
  });

  it('worldReadable lets other identities read the records but still not change them', async () => {
    const cluster = uniqueCluster('aclread');
    const mine = await stores.open({ cluster, auth: owner, worldReadable: true });
    const created = await mine.create('member/worker/w1', leaseRecord('w1', { n: 1 }));
    const reader = await stores.open({ cluster, auth: intruder });
    expect((await rejection(reader.create('member/worker/w2', leaseRecord('w2')))).code).toBe('PERMISSION_DENIED');
    expect(await reader.get('member/worker/w1')).toEqual(created);
    const watch = collectWatch(reader, '', (await reader.list('')).revision);
    const updated = await mine.update('member/worker/w1', leaseRecord('w1', { n: 2 }), created.version);
    await watch.until((e) => e.type === 'put' && e.record.version === updated.version);
    watch.close();
    expect((await rejection(reader.update('member/worker/w1', leaseRecord('x'), updated.version))).code).toBe('PERMISSION_DENIED');
    expect((await rejection(reader.delete('member/worker/w1', updated.version))).code).toBe('PERMISSION_DENIED');
    expect(await mine.get('member/worker/w1')).toEqual(updated);
  });

  it('the password appears in no error message and no log line', async () => {
    const lines: string[] = [];
    const log = (fields: unknown, message?: string) => lines.push(JSON.stringify(fields) + (message ?? ''));
    const logger = { debug: log, info: log, warn: log, error: log };
    const cluster = uniqueCluster('secret');
    const errors: unknown[] = [];
    const registry = await createRegistry({ type: 'zookeeper', cluster, zookeeper: { connectString: standalone(), auth: owner } }, { logger });
    try {
      await registry.announce({ role: 'worker', id: 'w1' });
      errors.push(await rejection(stores.open({ cluster, auth: intruder, logger })));
    } finally {
      await registry.close();
    }
    errors.push(await rejection(createRegistry({ type: 'zookeeper', cluster, zookeeper: { connectString: 'nope', auth: owner } }, { logger })));
    errors.push(await rejection(createRegistry({ type: 'zookeeper', cluster, zookeeper: { connectString: standalone(), auth: { username: 'u', password: 7 } } } as never, { logger })));
    errors.push(await rejection(createZookeeperStore({ connectString: '127.0.0.1:1', cluster, auth: owner, connectTimeoutMs: 300, logger })));
    expect(lines.length).toBeGreaterThan(0);
    for (const text of [...lines, ...errors.map((e) => `${(e as Error).message} ${JSON.stringify(e)} ${(e as Error).stack}`)]) {
      expect(text).not.toContain(owner.password);
      expect(text).not.toContain(intruder.password);
    }
    expect(errors.map((e) => (e as RegistryError).code)).toEqual(['PERMISSION_DENIED', 'INVALID_CONFIG', 'INVALID_CONFIG', 'UNAVAILABLE']);
  });
});
