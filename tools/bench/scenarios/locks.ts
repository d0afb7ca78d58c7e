import type { LockResult } from '../results.js';
import { summarize } from '../../testenv/measure/stats.js';
import { OpenRegistries, type BenchTarget } from '../target.js';
import { benchCluster, WAIT_BOUND_MS } from '../timing.js';

/** Contenders for the one lock. */
export const CONTENDERS = 10;

/**
 * Lock throughput: 10 registries each lock() and release() one lock in a loop
 * for `seconds`; each finishes the cycle it is in. Operations per second are
 * cycles over the whole time, the drain included.
 */
export async function lockThroughput(target: BenchTarget, seconds: number): Promise<LockResult> {
  const registries = new OpenRegistries(target);
  const cluster = benchCluster('locks');
  try {
    const contenders = await Promise.all(Array.from({ length: CONTENDERS }, (_, i) => registries.add({ cluster, identity: `contender-${i}`, slot: 10 + i })));
    const perContender = contenders.map(() => 0);
    const wait: number[] = [];
    const handoff: number[] = [];
    let releasedAt: number | undefined;
    const started = performance.now();
    const end = started + seconds * 1000;
    await Promise.all(
      contenders.map(async (registry, i) => {
        while (performance.now() < end) {
          const askedAt = performance.now();
          const lock = await registry.lock('bench', { timeoutMs: WAIT_BOUND_MS });
          const heldAt = performance.now();
          wait.push(heldAt - askedAt);
          if (releasedAt !== undefined) handoff.push(heldAt - releasedAt);
          perContender[i]!++;
          releasedAt = performance.now();
          await lock.release();
        }
      }),
    );
    const cycles = perContender.reduce((a, b) => a + b, 0);
    return { opsPerSecond: cycles / ((performance.now() - started) / 1000), wait: summarize(wait), handoff: summarize(handoff), perContender };
  } finally {
    await registries.closeAll();
  }
}
