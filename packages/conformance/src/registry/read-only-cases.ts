import { ErrorCode, type Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { describe, expect, it } from 'vitest';
import { skipReason } from '../capabilities.js';
import { waitFor } from '../wait-for.js';
import { codeOf, logMembers, type Harness } from './harness.js';

/** Every record of the cluster with its version, as the server has it: any write (create, update, mark, delete, label) changes it. */
async function recordVersions(registry: Registry): Promise<string[]> {
  const store = registryStore(registry);
  const lists = await Promise.all(['member/', 'heartbeat/', 'election/', 'lock/'].map((prefix) => store.list(prefix)));
  return lists.flatMap((l) => l.records.map((r) => `${r.key}@${r.version}`)).sort();
}

/** `registry.readOnly`: a registry that only looks writes nothing to the server, and still judges liveness as its mode does. */
export function readOnlyCases(h: Harness): void {
  const { timings } = h;
  const bound = timings.watchBoundMs;
  const e = timings.election;

  describe('a read-only registry (registry.readOnly)', () => {
    it('refuses announce, campaign, lock and tryLock with PERMISSION_DENIED, and writes nothing', async () => {
      const writer = await h.registry('writer');
      const viewer = await h.registry('viewer', { readOnly: true });
      const before = await recordVersions(writer);
      expect(await codeOf(viewer.announce({ role: 'worker' }))).toBe(ErrorCode.PERMISSION_DENIED);
      expect(await codeOf(() => viewer.campaign('scheduler'))).toBe(ErrorCode.PERMISSION_DENIED);
      expect(await codeOf(viewer.lock('l'))).toBe(ErrorCode.PERMISSION_DENIED);
      expect(await codeOf(viewer.tryLock('l'))).toBe(ErrorCode.PERMISSION_DENIED);
      await viewer.close();
      expect(await recordVersions(writer)).toEqual(before);
    });

    if (!h.capabilities.crashChild) {
      it.skip(skipReason(h.backend, 'crashChild', 'sees a crashed member expire and its leader lapse without writing a byte'), () => {});
      return;
    }

    it('sees a crashed member expire and its leader lapse without writing a byte: the records are as the crash left them', async () => {
      const child = await h.crashChild('child');
      await child.command({ op: 'announce', role: 'worker', id: 'w1', payload: { n: 1 } }, bound);
      await child.command({ op: 'campaign', election: 'scheduler' }, bound);
      await child.event('elected', bound);
      await child.command({ op: 'lock', name: 'l' }, bound);
      const viewer = await h.registry('viewer', { readOnly: true });
      const log = logMembers(viewer, 'worker');
      await log.next((ev) => ev.type === 'added', bound);
      const observer = viewer.observe('scheduler');
      await waitFor(() => observer.leader?.identity === 'child', bound, 'the viewer to see the child lead');
      expect((await viewer.locks()).map((l) => l.holder?.identity)).toEqual([expect.stringContaining('child')]);
      // A second registry reads the server directly; it writes nothing either (it reads nothing but lists).
      const lister = await h.registry('lister', { readOnly: true });
      const lapse = await h.lapse(child, await child.kill());
      const atCrash = await recordVersions(lister);
      const removed = await log.next((ev) => ev.type === 'removed', lapse.maxMs);
      expect(removed).toMatchObject({ reason: 'expired', member: { id: 'w1', payload: { n: 1 } } });
      await waitFor(() => observer.leader === undefined, e.leaseDurationMs + bound, 'the viewer to see no leader');
      expect(await viewer.members('worker')).toEqual([]);
      await viewer.close();
      // Nobody else read the role: only a writer would have marked and deleted the member; the viewer touched nothing.
      expect(await recordVersions(lister)).toEqual(atCrash);
      expect(atCrash.some((r) => r.startsWith('member/worker/w1@'))).toBe(true);
    });
  });
}
