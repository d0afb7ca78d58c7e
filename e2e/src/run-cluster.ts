import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SoakCluster, SoakTiming } from './cluster.js';
import type { FaultRecord } from './faults.js';
import type { FencedResource } from './fenced-resource.js';
import type { Timeline } from './timeline.js';
import { judge } from './verdict.js';
import { monotonicMs } from '@rollcall/tools/testenv/monotonic';

/** What a run of candidates shares, from its start to its verdict. */
export interface ClusterRun {
  resource: FencedResource;
  workDir: string;
  startedAt: number;
  /** What went wrong: the run's own findings, then the verdict's. */
  violations: string[];
}

/**
 * Starts a cluster and runs `scenario` on it, then shuts it down (its final
 * checks go to the violations); a run that cannot go on is a violation too, and
 * its processes are killed. The fenced resource is closed in every case.
 */
export async function runCluster(run: ClusterRun, start: () => Promise<SoakCluster>, scenario: (cluster: SoakCluster) => Promise<void>): Promise<SoakCluster | undefined> {
  let cluster: SoakCluster | undefined;
  try {
    cluster = await start();
    await scenario(cluster);
    run.violations.push(...(await cluster.shutdown()));
  } catch (err) {
    run.violations.push(`the run could not go on: ${(err as Error).message}`);
    await cluster?.kill();
  } finally {
    await run.resource.close();
  }
  return cluster;
}

/** The timeline of a finished run, judged (its violations added to the run's) and kept as workDir/timeline.json. */
export function judgeRun(
  run: ClusterRun,
  what: { names: readonly string[]; cluster: SoakCluster | undefined; faults: readonly FaultRecord[]; watchSeesEveryChange: boolean; timing: SoakTiming; podReadiness?: Timeline['podReadiness'] },
): Timeline {
  const timeline: Timeline = {
    names: what.names,
    incarnations: what.cluster?.records ?? [],
    writes: run.resource.writes,
    faults: what.faults,
    watchSeesEveryChange: what.watchSeesEveryChange,
    renewDeadlineMs: { election: what.timing.election.renewDeadlineMs, lock: what.timing.lock.renewDeadlineMs },
    startedAt: run.startedAt,
    endedAt: monotonicMs(),
    podReadiness: what.podReadiness,
  };
  run.violations.push(...judge(timeline));
  writeFileSync(join(run.workDir, 'timeline.json'), JSON.stringify({ ...timeline, violations: run.violations }));
  return timeline;
}
