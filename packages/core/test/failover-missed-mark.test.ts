import { afterEach, describe, expect, it } from 'vitest';
import type { DeadIncarnation } from '../src/index.js';
import { failoverKey, failoverStateOf } from '../src/failover-record.js';
import { markExpired } from '../src/liveness-judge.js';
import { memberKey } from '../src/record-key.js';
import type { WatchListener } from '../src/store.js';
import { MemoryStore } from '../src/testing.js';
import { Harness } from './harness.js';

/** A memory store whose watches fold an expiry mark into the delete that follows it, as ZooKeeper's one-shot watches may. */
class FoldingStore extends MemoryStore {
  override watch(prefix: string, fromRevision: string, listener: WatchListener) {
    return super.watch(prefix, fromRevision, {
      event: (e) => (e.type === 'put' && e.record.record.holderIdentity === '' ? undefined : listener.event(e)),
      error: (err) => listener.error(err),
    });
  }
}

// Found by the e2e failover chaos on ZooKeeper (issue 34 item 5): a crashed member's record marked expired and
// deleted while the leader's watch could not see the mark (a one-shot watch folding the mark into the delete, or
// a relist after a reconnect) reads as a graceful withdraw, and the failover skips an incarnation that crashed.

describe('failover: an expiry mark the leader did not see', () => {
  let h: Harness;
  afterEach(async () => h && (await h.closeAll()));

  // Open: it.fails until the failover can tell a withdraw from an expiry it did not see (see the report of branch chaos).
  it.fails('fails over a crashed incarnation whose expiry mark its watch folded into the delete', async () => {
    h = new Harness();
    const calls: DeadIncarnation[] = [];
    const { registry } = await h.registry('l', {}, h.clock, new FoldingStore({ backend: h.backend, cluster: 'test' }));
    const leadership = registry.campaign('boss');
    registry.failover('worker', leadership, async (dead) => void calls.push(dead));
    expect(await h.clock.advanceUntil(() => leadership.isLeader, 20_000)).toBe(true);
    const w = await h.registry('w');
    await w.registry.announce({ role: 'worker', id: 'w1', payload: { items: [1] } });
    const stored = (await w.store.get(memberKey('worker', 'w1')))!;
    const key = failoverKey('worker', 'w1', stored.created);
    const state = () => {
      const row = h.backend.rows.get(`test/${key}`);
      return row && (failoverStateOf({ key, version: '', created: '', record: row.record }) as { state: string }).state;
    };
    expect(await h.clock.advanceUntil(() => state() === 'seen', 2_000, 10)).toBe(true);
    // The worker crashes; a peer whose lease count began earlier marks its record expired, and the record is deleted
    // (by that peer, or by the worker's next incarnation taking its id) before the leader's own count has run out.
    w.store.partition();
    await h.clock.advance(1_000);
    const peer = new MemoryStore({ backend: h.backend, cluster: 'test' });
    const marked = await peer.update(stored.key, markExpired(stored.record, h.clock.wallNow()), stored.version);
    await peer.delete(stored.key, marked.version);
    expect(await h.clock.advanceUntil(() => state() === 'acked' || state() === 'skipped', 60_000, 100)).toBe(true);
    expect(leadership.isLeader).toBe(true);
    expect(state()).toBe('acked');
    expect(calls.map((c) => c.incarnation)).toEqual([stored.created]);
  });
});
