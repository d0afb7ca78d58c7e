import { afterEach, describe, expect, it } from 'vitest';
import type { WatchListener, WatchSubscription } from '../src/store.js';
import { MemoryStore } from '../src/testing.js';
import { Harness } from './harness.js';

let h: Harness;
afterEach(async () => h?.closeAll());

interface WatchSeen {
  prefix: string;
  /** Keys of the changes the store delivered to it. */
  keys: string[];
  open: boolean;
}

/** A memory store that records what the registry above it lists and watches, and every change each watch delivered. */
class RecordingStore extends MemoryStore {
  readonly lists: string[] = [];
  readonly watched: WatchSeen[] = [];

  override async list(prefix: string) {
    this.lists.push(prefix);
    return super.list(prefix);
  }

  override watch(prefix: string, fromRevision: string, listener: WatchListener): WatchSubscription {
    const seen: WatchSeen = { prefix, keys: [], open: true };
    this.watched.push(seen);
    const sub = super.watch(prefix, fromRevision, {
      event: (e) => {
        if (e.type !== 'progress') seen.keys.push(e.type === 'delete' ? e.key : e.type === 'put' ? e.record.key : e.entry.key);
        listener.event(e);
      },
      error: (err) => {
        seen.open = false;
        listener.error(err);
      },
    });
    return {
      close: () => {
        seen.open = false;
        sub.close();
      },
    };
  }

  /** The prefixes watched now, sorted. */
  openWatches(): string[] {
    return this.watched.filter((w) => w.open).map((w) => w.prefix).sort();
  }

  /** The keys of every change delivered to any of its watches. */
  received(): string[] {
    return this.watched.flatMap((w) => w.keys);
  }
}

const timing = { member: { leaseDurationMs: 6_000, heartbeatIntervalMs: 2_000 } };

describe('a registry watches only what it reads', () => {
  it('a process that only announces lists and watches nothing; its heartbeats reach those that read its role, and no one else', async () => {
    h = new Harness();
    const recorded = () => new RecordingStore({ backend: h.backend, cluster: 'test' });
    const workers = await Promise.all(['w1', 'w2', 'w3'].map((id) => h.registry(id, timing, h.clock, recorded())));
    for (const w of workers) await w.registry.announce({ role: 'worker' });
    const master = await h.registry('master', timing, h.clock, recorded());
    const added: string[] = [];
    master.registry.watchMembers('worker', (e) => added.push(`${e.type} ${e.member.id}`));
    master.registry.campaign('scheduler');
    // A worker that follows the leader, and reads no other worker.
    const follower = await h.registry('w4', timing, h.clock, recorded());
    await follower.registry.announce({ role: 'worker' });
    const observer = follower.registry.observe('scheduler');

    await h.clock.advance(60_000); // thirty heartbeats of each worker, thirty renewals of the leader

    for (const w of workers) {
      expect(w.store.lists).toEqual([]);
      expect(w.store.watched).toEqual([]);
    }
    expect(master.store.openWatches()).toEqual(['election/scheduler', 'member/worker/']);
    expect(added.sort()).toEqual(['added w1', 'added w2', 'added w3', 'added w4']);
    expect(master.store.received().filter((k) => k.startsWith('member/worker/')).length).toBeGreaterThanOrEqual(4 * 30);
    expect(follower.store.openWatches()).toEqual(['election/scheduler']);
    expect(observer.leader?.identity).toBe('master');
    expect(new Set(follower.store.received())).toEqual(new Set(['election/scheduler']));
  });

  it('what stops being read stops being watched: a released lock, a resignation, a closed observer, a failed tryLock', async () => {
    h = new Harness();
    const store = new RecordingStore({ backend: h.backend, cluster: 'test' });
    const { registry } = await h.registry('a', {}, h.clock, store);
    const other = await h.registry('b');
    const lock = await registry.lock('jobs');
    const leadership = registry.campaign('scheduler');
    const observer = registry.observe('reports');
    await h.clock.advance(0);
    expect(store.openWatches()).toEqual(['election/reports', 'election/scheduler', 'lock/jobs']);
    await lock.release();
    await leadership.resign();
    observer.close();
    expect(store.openWatches()).toEqual([]);
    const held = await other.registry.lock('batch');
    expect(await registry.tryLock('batch')).toBeUndefined();
    expect(store.openWatches()).toEqual([]);
    await held.release();
  });

  it('a wider scope replaces the narrower ones under it with no lost and no phantom change', async () => {
    h = new Harness();
    const store = new RecordingStore({ backend: h.backend, cluster: 'test' });
    const o = await h.registry('o', {}, h.clock, store);
    const a = await h.registry('a');
    const b = await h.registry('b');
    const first = a.registry.campaign('scheduler');
    await h.clock.advance(0);
    const changes: string[] = [];
    const observer = o.registry.observe('scheduler');
    observer.on('changed', (e) => changes.push(`${e.previous?.identity ?? '-'} → ${e.leader?.identity ?? '-'}`));
    expect((await observer.ready())?.identity).toBe('a');
    expect(changes).toEqual([]); // the leader first listed is the state, not a change
    // Every election, asked for while the leader changes hands: the narrow watch stops, the wide list carries what it missed.
    const all: string[] = [];
    o.registry.watchElections((e) => all.push(`${e.type} ${e.lease.name} ${e.lease.holder?.identity ?? '-'}`));
    await first.resign();
    b.registry.campaign('scheduler');
    b.registry.campaign('reports');
    await h.clock.advance(0);
    await h.clock.advance(3_000);
    expect(store.openWatches()).toEqual(['election/']);
    // Whether the moment with no leader between a's resignation and b's win is seen depends on when the wide list lands; nothing else may appear.
    expect([['a → b'], ['a → -', '- → b']]).toContainEqual(changes);
    expect(observer.leader?.identity).toBe('b');
    expect(all.filter((e) => e.includes('scheduler')).at(-1)).toBe('changed scheduler b');
    expect(all.filter((e) => e.includes('reports'))).toEqual(['added reports b']);
    expect((await o.registry.elections()).map((e) => `${e.name} ${e.holder?.identity}`)).toEqual(['reports b', 'scheduler b']);
  });

  it('the first read of a role on an unreachable backend rejects UNAVAILABLE; once it answers, the role is listed and watched', async () => {
    h = new Harness();
    const store = new RecordingStore({ backend: h.backend, cluster: 'test' });
    const { registry } = await h.registry('o', timing, h.clock, store);
    const w = await h.registry('w1', timing);
    await w.registry.announce({ role: 'worker' });
    store.partition();
    await expect(registry.members('worker')).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    store.heal();
    await h.clock.advance(1_000);
    expect((await registry.members('worker')).map((m) => m.id)).toEqual(['w1']);
    expect(store.openWatches()).toEqual(['member/worker/']);
  });
});
