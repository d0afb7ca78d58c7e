import type { MemberEvent, Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { formatMicroTime, heartbeatKey, memberKey } from '@rollcall/core/spi';
import { waitFor } from '@rollcall/conformance';
import { expect } from 'vitest';

/**
 * The `reaper` liveness mode's whole path, as two identities: `worker`
 * announces, heartbeats, updates and withdraws (both its records gone); then a
 * member that crashed right after announcing (its records written with the
 * worker's identity, no heartbeat after) is removed by `coordinator`'s reaper,
 * its records deleted. Both registries are opened with `registry.member.liveness=reaper`.
 */
export async function reaperRoundTrip(coordinator: Registry, worker: Registry, workerId: string): Promise<void> {
  const store = registryStore(coordinator);
  const handle = await worker.announce({ role: 'worker', payload: { status: 'NORMAL' } });
  const first = await store.get(heartbeatKey('worker', workerId));
  expect(first?.record.holderIdentity).toBe(workerId);
  await waitFor(async () => (await store.get(heartbeatKey('worker', workerId)))?.version !== first!.version || undefined, 10_000, 'a heartbeat');
  await handle.update({ status: 'BUSY' });
  await handle.withdraw();
  expect(await store.get(memberKey('worker', workerId))).toBeUndefined();
  expect(await store.get(heartbeatKey('worker', workerId))).toBeUndefined();
  const events: MemberEvent[] = [];
  coordinator.watchMembers('worker', (e) => events.push(e));
  const raw = registryStore(worker);
  const now = formatMicroTime(new Date());
  const beat = { holderIdentity: 'worker-gone', leaseDurationSeconds: 2, acquireTime: now, renewTime: now, leaseTransitions: 1 };
  await raw.create(memberKey('worker', 'worker-gone'), { ...beat, payload: { last: true } });
  await raw.create(heartbeatKey('worker', 'worker-gone'), beat);
  await waitFor(() => events.find((e) => e.type === 'removed'), 15_000, 'the reaper to remove the crashed member');
  expect(events.map((e) => `${e.type} ${e.member.id}`)).toEqual(['added worker-gone', 'removed worker-gone']);
  expect(events[1]).toMatchObject({ reason: 'expired', member: { payload: { last: true } } });
  // Readers learn `removed` from the reaper's mark, which lands before its delete: wait for the delete.
  await waitFor(async () => ((await store.get(memberKey('worker', 'worker-gone'))) === undefined && (await store.get(heartbeatKey('worker', 'worker-gone'))) === undefined) || undefined, 10_000, "the reaped member's records deleted");
}
