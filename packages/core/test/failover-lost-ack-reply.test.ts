import { afterEach, describe, expect, it } from 'vitest';
import { UnavailableError } from '../src/errors.js';
import { failoverKey, failoverStateOf } from '../src/failover-record.js';
import { memberKey } from '../src/record-key.js';
import { MemoryStore } from '../src/testing.js';
import { Harness } from './harness.js';

// Found by the e2e failover chaos on MariaDB under load (issue 34 item 5): an acknowledgement that landed but whose
// reply was lost (the request timed out) left the term retrying an ack already written: `acknowledged` was never
// emitted and `pending` never came down.

/** A memory store that writes the first `acked` failover record and then answers as if the request timed out. */
class LostAckReplyStore extends MemoryStore {
  lost = 0;
  override async update(...args: Parameters<MemoryStore['update']>): ReturnType<MemoryStore['update']> {
    const written = await super.update(...args);
    const [key, record] = args;
    const state = key.startsWith('failover/') ? failoverStateOf({ key, version: '', created: '', record }) : undefined;
    if (this.lost === 0 && state && state !== 'corrupt' && state.state === 'acked') {
      this.lost++;
      throw new UnavailableError('update did not answer within 1000 ms', { backend: 'memory' });
    }
    return written;
  }
}

describe('failover: an acknowledgement whose reply was lost', () => {
  let h: Harness;
  afterEach(async () => h && (await h.closeAll()));

  it('is acknowledged once, its event emitted and nothing left pending', async () => {
    h = new Harness();
    const store = new LostAckReplyStore({ backend: h.backend, cluster: 'test' });
    const { registry } = await h.registry('l', {}, h.clock, store);
    const leadership = registry.campaign('boss');
    let runs = 0;
    const failover = registry.failover('worker', leadership, async () => void runs++);
    const acknowledged: string[] = [];
    failover.on('acknowledged', (e) => acknowledged.push(e.incarnation));
    expect(await h.clock.advanceUntil(() => leadership.isLeader, 20_000)).toBe(true);
    const w = await h.registry('w');
    await w.registry.announce({ role: 'worker', id: 'w1' });
    const incarnation = (await w.store.get(memberKey('worker', 'w1')))!.created;
    const key = failoverKey('worker', 'w1', incarnation);
    w.store.partition(); // crashed
    const acked = () => {
      const row = h.backend.rows.get(`test/${key}`);
      const state = row && failoverStateOf({ key, version: '', created: '', record: row.record });
      return state !== undefined && state !== 'corrupt' && state.state === 'acked';
    };
    expect(await h.clock.advanceUntil(acked, 60_000, 100)).toBe(true);
    expect(store.lost).toBe(1);
    await h.clock.advance(120_000);
    expect(runs).toBe(1);
    expect(acknowledged).toEqual([incarnation]);
    expect(failover.pending).toBe(0);
  });
});
