import { afterEach, describe, expect, it } from 'vitest';
import type { MemberEvent, Registry } from '../src/index.js';
import { UnavailableError } from '../src/errors.js';
import { judgeExpiry } from '../src/expiry.js';
import { memberKey } from '../src/spi.js';
import { MemoryStore } from '../src/testing.js';
import { Harness } from './harness.js';

const timing = { member: { heartbeatIntervalMs: 5000, leaseDurationMs: 20000 } };
const LEASE = 20_000;

/** A memory store that counts the deletes it is asked for; with `dies.armed`, its first delete is the process's death: cut off for good, the delete never sent. */
class CountingStore extends MemoryStore {
  deletes = 0;
  died = false;
  dies: { armed: boolean } = { armed: false };
  override async delete(...args: Parameters<MemoryStore['delete']>): ReturnType<MemoryStore['delete']> {
    if (this.dies.armed) {
      this.dies.armed = false;
      this.died = true;
      this.partition();
      throw new UnavailableError('this process died', { backend: 'memory' });
    }
    this.deletes++;
    return super.delete(...args);
  }
}

/** A member `w1` of role `worker` announced by `a`, and `n` readers of the role, each with its event log and counting store. */
interface Reader {
  registry: Registry;
  store: CountingStore;
  events: MemberEvent[];
  summary(): string[];
}

async function memberAndReaders(h: Harness, n: number) {
  const a = await h.registry('a', timing);
  const readers: Reader[] = [];
  for (let i = 0; i < n; i++) {
    const { registry, store } = await h.registry(`r${i}`, timing, h.clock, new CountingStore({ backend: h.backend, cluster: 'test' }));
    const events: MemberEvent[] = [];
    registry.watchMembers('worker', (e) => events.push(e));
    readers.push({ registry, store, events, summary: () => events.map((e) => `${e.type} ${e.member.id}${e.type === 'removed' ? ` ${e.reason}` : ''}`) });
  }
  await a.registry.announce({ role: 'worker', id: 'w1', payload: { cpu: 3 } });
  await h.clock.advance(0);
  return { a, readers, deletes: () => readers.reduce((sum, r) => sum + r.store.deletes, 0) };
}

describe('the expiry judge', () => {
  it('counts from the latest sight of a change, and not the time the watch was blind', () => {
    expect(judgeExpiry(1000, [100], [{ live: true, liveSince: 0 }], 1099)).toEqual({ live: true, expired: false, dueInMs: 1, dueAt: 1100 });
    expect(judgeExpiry(1000, [100], [{ live: true, liveSince: 0 }], 1100)).toEqual({ live: true, expired: true, dueInMs: undefined, dueAt: 1100 });
    // Blind: nobody runs out, however long ago the change was seen.
    expect(judgeExpiry(1000, [100], [{ live: true, liveSince: 0 }, { live: false, liveSince: 0 }], 5000)).toEqual({ live: false, expired: false, dueInMs: undefined, dueAt: 1100 });
    // Live again at 4000: a whole lease from then.
    expect(judgeExpiry(1000, [100], [{ live: true, liveSince: 4000 }], 4500)).toEqual({ live: true, expired: false, dueInMs: 500, dueAt: 5000 });
  });
});

describe('heartbeat mode: one reader deletes an expired member', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('a crashed member is deleted once, by the reader whose mark landed, and every reader reports it expired', async () => {
    h = new Harness();
    const { a, readers, deletes } = await memberAndReaders(h, 3);
    a.store.partition(); // the member crashes: no heartbeat from now on
    await h.clock.advance(LEASE);
    for (const r of readers) expect(r.summary()).toEqual(['added w1', 'removed w1 expired']);
    expect(h.backend.rows.size).toBe(0);
    expect(deletes()).toBe(1);
    await h.clock.advance(2 * LEASE);
    expect(deletes()).toBe(1); // and nobody deletes again
  });

  it('when the marking reader dies before its delete, the mark is marked again a lease later and deleted by one reader', async () => {
    h = new Harness();
    const { a, readers, deletes } = await memberAndReaders(h, 3);
    const dies = { armed: true };
    for (const r of readers) r.store.dies = dies;
    a.store.partition();
    await h.clock.advance(LEASE);
    expect(dies.armed).toBe(false); // the marker died at its delete
    const left = h.backend.rows.get(`test/${memberKey('worker', 'w1')}`);
    expect(left?.record.holderIdentity).toBe(''); // its mark stays: the member is gone for every reader
    for (const r of readers) expect(r.summary()).toEqual(['added w1', 'removed w1 expired']);
    await h.clock.advance(LEASE - 1);
    expect(h.backend.rows.size).toBe(1);
    await h.clock.advance(1);
    expect(h.backend.rows.size).toBe(0);
    expect(deletes()).toBe(1);
    for (const r of readers) expect(r.summary()).toEqual(['added w1', 'removed w1 expired']); // no second event
  });

  it('a member that was only cut off takes its marked record over and is added again', async () => {
    h = new Harness();
    const { a, readers } = await memberAndReaders(h, 2);
    const dies = { armed: true };
    for (const r of readers) r.store.dies = dies;
    a.store.partition();
    await h.clock.advance(LEASE); // marked; its marker died before deleting
    a.store.heal();
    await h.clock.advance(5_000); // the next heartbeat
    expect(h.backend.rows.get(`test/${memberKey('worker', 'w1')}`)?.record.holderIdentity).toBe('w1');
    const alive = readers.find((r) => !r.store.died)!;
    expect(alive.summary()).toEqual(['added w1', 'removed w1 expired', 'added w1']);
  });
});
