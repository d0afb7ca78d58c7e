import { silentLogger } from '@rollcall/core';
import type { RecordKey, RecordStore } from '@rollcall/core/spi';
import { collectWatch, describeEvent, leaseRecord, uniqueCluster, type CollectedWatch } from '@rollcall/conformance';
import { AuditLog } from '@rollcall/tools/testenv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, loadKubeConfig, type RequestContext, type StreamHandlers } from '@rollcall/kube-client';
import { createKubernetesStore, KubernetesStore } from '../src/index.js';
import { Admin } from './admin.js';
import { kubeEnv } from './kube-env.js';

/** How long a change may take to reach a watch, milliseconds. */
const BOUND_MS = 10_000;
/** A role that cannot be a label value (over 63 characters), and one that shares its start. */
const LONG = 'r'.repeat(64);
const LONGER = `${LONG}x`;
const admin = new Admin();
let namespace: string;
const stores: RecordStore[] = [];

/** An API client that counts the objects its watch streams deliver, before any filter of the store: what crossed the wire. */
class CountingClient extends ApiClient {
  /** ADDED, MODIFIED and DELETED lines received, bookmarks not counted. */
  changes = 0;

  override stream(path: string, context: RequestContext, handlers: StreamHandlers, format?: 'json' | 'text'): Promise<{ abort(): void }> {
    return super.stream(path, context, {
      line: (value) => {
        if ((value as { type?: string }).type !== 'BOOKMARK') this.changes++;
        handlers.line(value);
      },
      end: handlers.end,
    }, format);
  }
}

type Lock = 'lease' | 'configmap';

async function writer(cluster: string, lock: Lock): Promise<RecordStore> {
  const store = await createKubernetesStore({ cluster, kubeconfig: kubeEnv().kubeconfig, namespace, lock });
  stores.push(store);
  return store;
}

/** A store whose client counts what its watches receive from the API server. */
function observer(cluster: string, lock: Lock): { store: KubernetesStore; client: CountingClient } {
  const client = new CountingClient(loadKubeConfig({ kubeconfig: kubeEnv().kubeconfig }), 5000, 'rollcall-test (observer)');
  const store = new KubernetesStore({ client, logger: silentLogger, cluster, namespace, lock, watchSilenceTimeoutMs: 90_000, watchTimeoutSeconds: 300, podOwner: undefined, pods: { serviceTemplate: 'rollcall-{role}', podUid: undefined, servedTimeoutMs: 30_000 } });
  stores.push(store);
  return { store, client };
}

/** Writes records by key, keeping each one's version, and logs every write in order. */
class Writes {
  readonly log: string[] = [];
  private readonly versions = new Map<RecordKey, string>();
  constructor(private readonly store: RecordStore) {}

  async put(key: RecordKey, holder = 'h'): Promise<void> {
    const version = this.versions.get(key);
    const stored = version ? await this.store.update(key, leaseRecord(holder), version) : await this.store.create(key, leaseRecord(holder));
    this.versions.set(key, stored.version);
    this.log.push(`put ${key} ${holder}`);
  }

  async delete(key: RecordKey): Promise<void> {
    await this.store.delete(key, this.versions.get(key)!);
    this.versions.delete(key);
    this.log.push(`delete ${key}`);
  }

  keys(): RecordKey[] {
    return [...this.versions.keys()].sort();
  }
}

const keyOf = (line: string) => line.split(' ')[1]!;

beforeAll(async () => {
  namespace = await admin.namespace('prefix');
});

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

describe.each<Lock>(['lease', 'configmap'])('with lock=%s, list and watch ask the API server for the prefix only', (lock) => {
  it('a watch of member/a/ and one of election/e1 receive no heartbeat of role b, nor a heartbeat record of role a, over the wire, one of exactly election/e1 not even another election, and their requests carry the narrowed selectors', async () => {
    const cluster = uniqueCluster('narrow');
    const writes = new Writes(await writer(cluster, lock));
    for (const key of ['member/a/a1', 'heartbeat/a/a1', 'member/b/b1', 'member/b/b2', 'member/b/b3', 'election/e1', 'election/e2', 'lock/l1']) await writes.put(key);

    const audit = new AuditLog(kubeEnv().auditLogPath, async (name) => void (await admin.coordination.readNamespacedLease({ name, namespace }).catch(() => undefined)));
    const window = audit.open();
    const role = observer(cluster, lock);
    const election = observer(cluster, lock);
    const roleWatch = collectWatch(role.store, 'member/a/', (await role.store.list('member/a/')).revision);
    const electionWatch = collectWatch(election.store, 'election/e1', (await election.store.list('election/e1')).revision);
    // A registry's watch of one election it campaigns in or observes: that object alone, by name.
    const one = observer(cluster, lock);
    const oneWatch = collectWatch(one.store, 'election/e1', (await one.store.list('election/e1', { exact: true })).revision, { exact: true });

    // Heartbeats of role b, a write to another election and one to a lock: none is under either prefix.
    for (let beat = 0; beat < 10; beat++) for (const key of ['member/b/b1', 'member/b/b2', 'member/b/b3']) await writes.put(key, `beat-${beat}`);
    // The reaper liveness mode's heartbeats of role a: a record of their own kind, never a member/a/ watch's.
    for (let beat = 0; beat < 10; beat++) await writes.put('heartbeat/a/a1', `beat-${beat}`);
    await writes.put('election/e2', 'other');
    await writes.put('lock/l1', 'other');
    await writes.put('member/a/a1', 'end');
    await writes.put('election/e1', 'end');
    expect((await roleWatch.until((e) => e.type === 'put' && e.record.record.holderIdentity === 'end', BOUND_MS)).map(describeEvent)).toEqual(['put member/a/a1 end']);
    expect((await electionWatch.until((e) => e.type === 'put' && e.record.record.holderIdentity === 'end', BOUND_MS)).map(describeEvent)).toEqual(['put election/e1 end']);
    // What the API server sent, of the 44 writes: the one under member/a/; the elections' two, as
    // election/e1 is selected with its kind (election/e10 would be under it), never a heartbeat.
    expect(role.client.changes).toBe(1);
    expect(election.client.changes).toBe(2);
    expect((await oneWatch.until((e) => e.type === 'put' && e.record.record.holderIdentity === 'end', BOUND_MS)).map(describeEvent)).toEqual(['put election/e1 end']);
    expect(one.client.changes).toBe(1);

    const requests = (await audit.requests(window)).filter((e) => (e.verb === 'list' || e.verb === 'watch') && e.objectRef?.namespace === namespace && e.requestURI?.includes(cluster));
    const selectors = requests.map((e) => {
      const query = new URL(e.requestURI!, 'https://apiserver').searchParams;
      return `${e.verb} ${e.objectRef?.resource} ${query.get('labelSelector')}${query.has('fieldSelector') ? ` ${query.get('fieldSelector')}` : ''}`;
    });
    const resources = lock === 'configmap' ? ['leases', 'configmaps'] : ['leases'];
    const expected = resources.flatMap((resource) =>
      ['list', 'watch'].flatMap((verb) => [
        `${verb} ${resource} rollcall.dev/cluster=${cluster},rollcall.dev/kind=member,rollcall.dev/role=a`,
        `${verb} ${resource} rollcall.dev/cluster=${cluster},rollcall.dev/kind=election`,
        `${verb} ${resource} rollcall.dev/cluster=${cluster},rollcall.dev/kind=election metadata.name=${one.store.objectName('election/e1')}`,
      ]),
    );
    expect(selectors.sort()).toEqual(expected.sort());
    roleWatch.close();
    electionWatch.close();
    oneWatch.close();
  });

  it('list and watch of every prefix shape return exactly the records whose keys start with it, a role that cannot be a label value included', async () => {
    const cluster = uniqueCluster('shapes');
    const writes = new Writes(await writer(cluster, lock));
    const initial = ['member/a/a1', 'member/a/a1x', 'member/a/a2', 'member/ab/x', 'member/b/b1', 'heartbeat/a/a1', 'heartbeat/b/b1', `member/${LONG}/l1`, `member/${LONGER}/l2`, 'election/e1', 'election/e10', 'election/e2', 'lock/l1'];
    for (const key of initial) await writes.put(key);
    /** Each prefix shape, and a key under it (its own) whose last write ends the check of its watch. */
    const prefixes: Record<string, RecordKey> = {
      '': 'election/zz-all',
      'member/': 'member/zz/end',
      'member/a/': 'member/a/zz-end',
      [`member/${LONG}/`]: `member/${LONG}/zz-end`,
      'member/a': 'member/ab/zz-end',
      'member/a/a1': 'member/a/a1',
      [`member/${LONG}/l1`]: `member/${LONG}/l1`,
      'heartbeat/a/': 'heartbeat/a/zz-end',
      'election/': 'election/zz-end',
      'election/e1': 'election/e1',
      'lock/': 'lock/zz-end',
      'lock/l1': 'lock/l1',
    };

    const { store } = observer(cluster, lock);
    const watches = new Map<string, CollectedWatch>();
    for (const prefix of Object.keys(prefixes)) {
      const list = await store.list(prefix);
      expect(list.corrupt).toEqual([]);
      expect(list.records.map((r) => r.key).sort(), `list ${JSON.stringify(prefix)}`).toEqual(initial.filter((k) => k.startsWith(prefix)).sort());
      watches.set(prefix, collectWatch(store, prefix, list.revision));
    }
    const from = writes.log.length;

    // Records created, changed and deleted under and outside each prefix.
    await writes.put('member/a/a3');
    await writes.put('member/ab/y');
    await writes.put(`member/${LONG}/l3`);
    await writes.put(`member/${LONGER}/l4`);
    for (let beat = 0; beat < 3; beat++) await writes.put('member/b/b1', `beat-${beat}`);
    for (let beat = 0; beat < 3; beat++) await writes.put('heartbeat/a/a1', `beat-${beat}`);
    await writes.put('heartbeat/b/b1', 'beat');
    await writes.delete('member/a/a2');
    await writes.delete(`member/${LONG}/l1`);
    await writes.put('election/e1', 'e1b');
    await writes.put('election/e10', 'e10b');
    await writes.delete('election/e2');
    await writes.put('lock/e1');
    await writes.put('lock/l1.x');
    await writes.delete('lock/l1');
    await writes.put('lock/l1', 'again');
    await writes.put(`member/${LONG}/l1`, 'again');
    await writes.put('member/a/a1', 'a1b');
    // Two rounds of end marks: whatever a watch should not see and was written before its second mark shows before it.
    for (const round of ['end-1', 'end-2']) for (const mark of Object.values(prefixes)) await writes.put(mark, round);

    for (const [prefix, watch] of watches) {
      const mark = prefixes[prefix]!;
      const seen = await watch.until((e) => e.type === 'put' && e.record.key === mark && e.record.record.holderIdentity === 'end-2', BOUND_MS);
      const last = writes.log.lastIndexOf(`put ${mark} end-2`);
      const expected = writes.log.slice(from, last + 1).filter((line) => keyOf(line).startsWith(prefix));
      expect(seen.map(describeEvent), `watch ${JSON.stringify(prefix)}`).toEqual(expected);
      watch.close();
    }
    for (const prefix of Object.keys(prefixes)) {
      expect((await store.list(prefix)).records.map((r) => r.key).sort(), `list ${JSON.stringify(prefix)} after`).toEqual(writes.keys().filter((k) => k.startsWith(prefix)));
    }
  });
});
