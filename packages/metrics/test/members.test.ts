import { afterEach, describe, expect, it } from 'vitest';
import { MetricsHarness } from './harness.js';

const timing = { member: { heartbeatIntervalMs: 5000, leaseDurationMs: 20000 } };

let h: MetricsHarness;
afterEach(async () => h?.closeAll());

describe('rollcall_members and rollcall_member_events_total', () => {
  it('count every role the registry reads: members present before, then each added, updated and removed, with the reason', async () => {
    h = new MetricsHarness();
    const peer = await h.registry('peer', timing);
    await peer.registry.announce({ role: 'worker', id: 'w1', payload: { load: 1 } });
    await peer.registry.announce({ role: 'master', id: 'm1' });
    await peer.registry.announce({ role: 'standby', id: 's1' });
    const { registry } = await h.watched('app', {}, timing, ['worker', 'master']);
    await h.clock.advance(0);
    expect(await h.value('rollcall_members', { role: 'worker' })).toBe(1);
    expect(await h.value('rollcall_members', { role: 'master' })).toBe(1);
    // The members present are the state, not changes.
    expect(await h.value('rollcall_member_events_total', { role: 'worker', event: 'added' })).toBeUndefined();
    // A role the application does not read is not counted, nor watched for the metrics' sake.
    expect(await h.value('rollcall_members', { role: 'standby' })).toBeUndefined();
    expect(registry.watchedRoles()).toEqual(['master', 'worker']);

    const w2 = await peer.registry.announce({ role: 'worker', id: 'w2' });
    const w3 = await peer.registry.announce({ role: 'worker', id: 'w3', payload: { load: 1 } });
    await w3.update({ load: 2 });
    await w2.withdraw();
    await h.clock.advance(0);
    expect(await h.value('rollcall_members', { role: 'worker' })).toBe(2);
    expect(await h.value('rollcall_member_events_total', { role: 'worker', event: 'added' })).toBe(2);
    expect(await h.value('rollcall_member_events_total', { role: 'worker', event: 'updated' })).toBe(1);
    expect(await h.value('rollcall_member_events_total', { role: 'worker', event: 'removed', reason: 'deleted' })).toBe(1);

    // The peer stops heartbeating: its members expire by the app's clock.
    peer.store.partition();
    await h.clock.advance(20_000);
    expect(await h.value('rollcall_members', { role: 'worker' })).toBe(0);
    expect(await h.value('rollcall_members', { role: 'master' })).toBe(0);
    expect(await h.value('rollcall_member_events_total', { role: 'worker', event: 'removed', reason: 'expired' })).toBe(2);
    expect((await registry.members('worker')).length).toBe(0);
  });

  it('with roles named, count those roles only, through watchMembers', async () => {
    h = new MetricsHarness();
    const peer = await h.registry('peer', timing);
    await peer.registry.announce({ role: 'worker', id: 'w1' });
    await h.watched('app', { roles: ['worker', 'standby'] }, timing);
    await peer.registry.announce({ role: 'master', id: 'm1' });
    await peer.registry.announce({ role: 'worker', id: 'w2' });
    await h.clock.advance(0);
    expect(await h.value('rollcall_members', { role: 'worker' })).toBe(2);
    expect(await h.value('rollcall_members', { role: 'standby' })).toBe(0);
    expect(await h.value('rollcall_members', { role: 'master' })).toBeUndefined();
    expect(await h.value('rollcall_member_events_total', { role: 'worker', event: 'added' })).toBe(1);
    expect(await h.value('rollcall_member_events_total', { role: 'master', event: 'added' })).toBeUndefined();
  });

  it('no member id or identity is a label', async () => {
    h = new MetricsHarness();
    const peer = await h.registry('peer-identity', timing);
    await h.watched('app-identity', {}, timing);
    await peer.registry.announce({ role: 'worker', id: 'member-id-1' });
    await h.clock.advance(0);
    const values = (await h.scrape()).flatMap((s) => Object.values(s.labels));
    expect(values).not.toContain('member-id-1');
    expect(values.filter((v) => v.includes('identity'))).toEqual([]);
  });
});
