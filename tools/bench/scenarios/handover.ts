import { waitFor } from '@rollcall/conformance';
import type { Registry } from '@rollcall/core';
import { summarize, type Summary } from '../../testenv/measure/stats.js';
import { OpenRegistries, type BenchTarget } from '../target.js';
import { benchCluster, dephase, timeOf, WAIT_BOUND_MS } from '../timing.js';

/** Resolves once `registry`'s view of `election` has `identity` as its leader. */
export async function whenSeesLeader(registry: Registry, election: string, identity: string): Promise<void> {
  const observer = registry.observe(election);
  try {
    await waitFor(() => observer.leader?.identity === identity, WAIT_BOUND_MS, `${registry.identity} to see ${identity} lead ${election}`);
  } finally {
    observer.close();
  }
}

/**
 * Graceful handover: two registries (two processes' worth of connections) take
 * turns; each round the follower has seen the leader's record, then the leader
 * resigns. Measured from the resign() call to the follower's `elected`, which
 * the watch (not a poll) should bring.
 */
export async function gracefulHandover(target: BenchTarget, rounds: number): Promise<Summary> {
  const registries = new OpenRegistries(target);
  const cluster = benchCluster('handover');
  const election = 'handover';
  try {
    let [leaderRegistry, followerRegistry] = await Promise.all([
      registries.add({ cluster, identity: 'candidate-a', slot: 1 }),
      registries.add({ cluster, identity: 'candidate-b', slot: 2 }),
    ]);
    let leader = leaderRegistry.campaign(election);
    await leader.whenElected(AbortSignal.timeout(WAIT_BOUND_MS));
    const samples: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const follower = followerRegistry.campaign(election);
      await whenSeesLeader(followerRegistry, election, leaderRegistry.identity);
      await dephase();
      const electedAt = timeOf(follower.whenElected(AbortSignal.timeout(WAIT_BOUND_MS)));
      const resignedAt = performance.now();
      await leader.resign();
      samples.push((await electedAt) - resignedAt);
      [leader, leaderRegistry, followerRegistry] = [follower, followerRegistry, leaderRegistry];
    }
    await leader.resign();
    return summarize(samples);
  } finally {
    await registries.closeAll();
  }
}
