import { afterEach, describe, expect, it } from 'vitest';
import { type MemberEvent } from '../src/index.js';
import { formatMicroTime, type LeaseRecord } from '../src/lease-record.js';
import { MemoryStore } from '../src/testing.js';
import { Harness, until } from './harness.js';

const timing = { member: { heartbeatIntervalMs: 5000, leaseDurationMs: 20000 } };
const KEY = 'member/worker/w1';

describe('a mark that carries a payload the view never showed (an update folded into the mark)', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  const record = (n: number, mark: Partial<LeaseRecord> = {}): LeaseRecord => ({
    holderIdentity: 'w1',
    leaseDurationSeconds: 20,
    acquireTime: formatMicroTime(h.clock.wallNow()),
    renewTime: formatMicroTime(h.clock.wallNow()),
    leaseTransitions: 1,
    payload: { n },
    ...mark,
  });

  /** The reader's events, and a raw store writing w1's record as another process (or a relist) would show it. */
  async function setUp() {
    h = new Harness();
    const reader = await h.registry('reader', timing);
    const events: MemberEvent[] = [];
    reader.registry.watchMembers('worker', (e) => events.push(e));
    await until(() => true);
    const raw = new MemoryStore({ backend: h.backend, cluster: 'test' });
    const first = await raw.create(KEY, record(1));
    await h.clock.advance(0);
    return { events, raw, first };
  }

  const lines = (events: MemberEvent[]) => events.map((e) => `${e.type} ${JSON.stringify(e.member.payload)}${e.type === 'removed' ? ` ${e.reason}` : ''}`);

  it('a withdraw mark with a newer payload: updated to it, then removed (deleted) with it — the last data', async () => {
    const { events, raw, first } = await setUp();
    // the update and the withdraw mark reach the reader as one state, as a relist shows them
    await raw.update(KEY, record(2, { withdrawn: true }), first.version);
    await h.clock.advance(0);
    expect(lines(events)).toEqual(['added {"n":1}', 'updated {"n":2}', 'removed {"n":2} deleted']);
    expect(events[1]).toMatchObject({ previous: { payload: { n: 1 } } });
    await raw.close();
  });

  it('a withdraw mark with the payload the view holds: removed alone, no updated', async () => {
    const { events, raw, first } = await setUp();
    await raw.update(KEY, record(1, { withdrawn: true }), first.version);
    await h.clock.advance(0);
    expect(lines(events)).toEqual(['added {"n":1}', 'removed {"n":1} deleted']);
    await raw.close();
  });
});
