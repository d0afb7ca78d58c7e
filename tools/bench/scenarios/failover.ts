import { CrashClient } from '@rollcall/conformance/crash';
import { summarize, type Summary } from '../../testenv/measure/stats.js';
import { OpenRegistries, type BenchTarget } from '../target.js';
import { BENCH_TIMING, benchCluster, dephase, timeOf, WAIT_BOUND_MS } from '../timing.js';
import { whenSeesLeader } from './handover.js';

/**
 * Crash failover: each round a leader in a child process is killed with
 * SIGKILL (its connection dies with it, nothing is released) once the
 * survivor, in this process, has seen it lead. Measured from the signal to the
 * survivor's `elected`: bounded below by what is left of the lease, which the
 * survivor judges by its own clock from the last renew it saw.
 */
export async function crashFailover(target: BenchTarget, rounds: number): Promise<Summary> {
  const registries = new OpenRegistries(target);
  const cluster = benchCluster('failover');
  try {
    const survivor = await registries.add({ cluster, identity: 'survivor', slot: 1 });
    const samples: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const election = `failover-${round}`;
      const identity = `crashed-${round}`;
      const child = await CrashClient.start(target.crashChild, { cluster, identity, election: BENCH_TIMING, lock: BENCH_TIMING }, WAIT_BOUND_MS);
      try {
        await child.command({ op: 'campaign', election }, WAIT_BOUND_MS);
        await child.event('elected', WAIT_BOUND_MS, (e) => e.election === election);
        const candidacy = survivor.campaign(election);
        await whenSeesLeader(survivor, election, identity);
        await dephase();
        const electedAt = timeOf(candidacy.whenElected(AbortSignal.timeout(WAIT_BOUND_MS)));
        const killedAt = await child.kill();
        samples.push((await electedAt) - killedAt);
        await candidacy.resign();
      } finally {
        await child.kill();
      }
    }
    return summarize(samples);
  } finally {
    await registries.closeAll();
  }
}
