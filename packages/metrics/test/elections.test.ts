import { afterEach, describe, expect, it } from 'vitest';
import { electionKey } from '@rollcall/core/spi';
import { MetricsHarness } from './harness.js';

let h: MetricsHarness;
afterEach(async () => h?.closeAll());

describe('leadership metrics', () => {
  it('a campaign: leader 1 with its term\'s fencing token while elected, 0 after, each transition counted with its reason', async () => {
    h = new MetricsHarness();
    const { registry } = await h.watched('app');
    const leadership = registry.campaign('scheduler');
    const token = await leadership.whenElected();
    expect(await h.value('rollcall_election_leader', { election: 'scheduler' })).toBe(1);
    expect(await h.value('rollcall_election_fencing_token', { election: 'scheduler' })).toBe(token);
    expect(await h.value('rollcall_leadership_changes_total', { election: 'scheduler', event: 'elected' })).toBe(1);

    await leadership.resign();
    expect(await h.value('rollcall_election_leader', { election: 'scheduler' })).toBe(0);
    expect(await h.value('rollcall_election_fencing_token', { election: 'scheduler' })).toBe(token);
    expect(await h.value('rollcall_leadership_changes_total', { election: 'scheduler', event: 'lost', reason: 'released' })).toBe(1);

    const again = registry.campaign('scheduler');
    expect(await again.whenElected()).toBe(token + 1);
    expect(await h.value('rollcall_election_fencing_token', { election: 'scheduler' })).toBe(token + 1);
    expect(await h.value('rollcall_leadership_changes_total', { election: 'scheduler', event: 'elected' })).toBe(2);
  });

  it('a leader cut off from the backend steps down at its renew deadline: lost, reason renew-deadline', async () => {
    h = new MetricsHarness();
    const { registry, store } = await h.watched('app');
    await registry.campaign('scheduler').whenElected();
    store.partition();
    await h.clock.advance(10_000); // the default renew deadline
    expect(await h.value('rollcall_election_leader', { election: 'scheduler' })).toBe(0);
    expect(await h.value('rollcall_leadership_changes_total', { election: 'scheduler', event: 'lost', reason: 'renew-deadline' })).toBe(1);
  });

  it('an observed election: whether it has a leader, the leader\'s fencing token, and each change of leader', async () => {
    h = new MetricsHarness();
    const peer = await h.registry('peer');
    await h.watched('app', { elections: ['scheduler'] });
    expect(await h.value('rollcall_election_leader_present', { election: 'scheduler' })).toBe(0);
    expect(await h.value('rollcall_election_leader_changes_total', { election: 'scheduler' })).toBe(0);

    const leadership = peer.registry.campaign('scheduler');
    const token = await leadership.whenElected();
    await h.clock.advance(0);
    expect(await h.value('rollcall_election_leader_present', { election: 'scheduler' })).toBe(1);
    expect(await h.value('rollcall_election_fencing_token', { election: 'scheduler' })).toBe(token);
    // Not this process's leadership.
    expect(await h.value('rollcall_election_leader', { election: 'scheduler' })).toBeUndefined();

    await leadership.resign();
    await h.clock.advance(0);
    expect(await h.value('rollcall_election_leader_present', { election: 'scheduler' })).toBe(0);
    expect(await h.value('rollcall_election_leader_changes_total', { election: 'scheduler' })).toBe(2);

    // A leader that stops renewing is gone by the observer's clock after its lease.
    const next = peer.registry.campaign('scheduler');
    expect(await next.whenElected()).toBe(token + 1);
    peer.store.partition();
    await h.clock.advance(0);
    expect(await h.value('rollcall_election_leader_present', { election: 'scheduler' })).toBe(1);
    await h.clock.advance(16_000); // past the default 15 s lease
    expect(await h.value('rollcall_election_leader_present', { election: 'scheduler' })).toBe(0);
    expect(await h.value('rollcall_election_fencing_token', { election: 'scheduler' })).toBe(token + 1);
    expect(await h.value('rollcall_election_leader_changes_total', { election: 'scheduler' })).toBe(4);
  });

  it("elections 'all': every election of the cluster, as watchElections sees them", async () => {
    h = new MetricsHarness();
    const peer = await h.registry('peer');
    const reports = await peer.registry.campaign('reports').whenElected();
    await h.watched('app', { elections: 'all' });
    await h.clock.advance(0); // the first watch lists every election
    expect(await h.value('rollcall_election_leader_present', { election: 'reports' })).toBe(1);
    expect(await h.value('rollcall_election_fencing_token', { election: 'reports' })).toBe(reports);
    expect(await h.value('rollcall_election_leader_changes_total', { election: 'reports' })).toBe(0);

    const scheduler = peer.registry.campaign('scheduler');
    const token = await scheduler.whenElected();
    await h.clock.advance(0);
    expect(await h.value('rollcall_election_leader_present', { election: 'scheduler' })).toBe(1);
    expect(await h.value('rollcall_election_fencing_token', { election: 'scheduler' })).toBe(token);
    await scheduler.resign();
    await h.clock.advance(0);
    expect(await h.value('rollcall_election_leader_present', { election: 'scheduler' })).toBe(0);
    expect(await h.value('rollcall_election_leader_changes_total', { election: 'scheduler' })).toBe(1);
  });

  it("elections 'all' keeps at most maxObservedElections series: the rest are counted, and a gone election's series go with it", async () => {
    h = new MetricsHarness();
    const peer = await h.registry('peer');
    for (const name of ['a', 'b', 'c']) await peer.registry.campaign(name).whenElected();
    await h.watched('app', { elections: 'all', maxObservedElections: 2 });
    await h.clock.advance(0);
    const present = async () => (await Promise.all(['a', 'b', 'c'].map(async (e) => ((await h.value('rollcall_election_leader_present', { election: e })) === undefined ? [] : [e])))).flat();
    const seen = await present();
    expect(seen).toHaveLength(2);
    expect(await h.value('rollcall_elections_unobserved')).toBe(1);
    // One election with series goes (its record deleted, as an operator would): its series go, the label set shrinks.
    const gone = seen[0]!;
    const stored = (await peer.store.get(electionKey(gone)))!;
    await peer.store.delete(electionKey(gone), stored.version);
    await h.clock.advance(0);
    expect(await present()).toEqual(seen.slice(1));
    expect(await h.value('rollcall_election_fencing_token', { election: gone })).toBeUndefined();
  });
});

