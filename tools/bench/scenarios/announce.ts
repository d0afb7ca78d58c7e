import { WaitTimeoutError } from '@rollcall/conformance';
import { summarize, type Summary } from '../../testenv/measure/stats.js';
import { OpenRegistries, type BenchTarget } from '../target.js';
import { benchCluster, dephase, WAIT_BOUND_MS } from '../timing.js';

/**
 * Announce → added: one registry announces a member, another watches the
 * role. Measured from the announce() call to the watcher's `added` event;
 * the member is withdrawn before the next round.
 */
export async function announceToAdded(target: BenchTarget, rounds: number): Promise<Summary> {
  const registries = new OpenRegistries(target);
  const cluster = benchCluster('announce');
  const role = 'worker';
  try {
    const [announcer, watcher] = await Promise.all([
      registries.add({ cluster, identity: 'announcer', slot: 1 }),
      registries.add({ cluster, identity: 'watcher', slot: 2 }),
    ]);
    const arrivals = new Map<string, (at: number) => void>();
    const subscription = watcher.watchMembers(role, (e) => {
      if (e.type === 'added') arrivals.get(e.member.id)?.(performance.now());
    });
    const samples: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const id = `member-${round}`;
      const arrived = new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new WaitTimeoutError(`${id} added at the watcher`, WAIT_BOUND_MS)), WAIT_BOUND_MS);
        arrivals.set(id, (at) => (clearTimeout(timer), resolve(at)));
      });
      await dephase();
      const announcedAt = performance.now();
      const member = await announcer.announce({ role, id, payload: { round } });
      samples.push((await arrived) - announcedAt);
      arrivals.delete(id);
      await member.withdraw();
    }
    subscription.close();
    return summarize(samples);
  } finally {
    await registries.closeAll();
  }
}
