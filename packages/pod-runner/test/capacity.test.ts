import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import type { PodRunner } from '../src/index.js';
import { admin, enforcedPodQuota, exits, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

let env: { namespace: string; kubeconfig: string };
let runner: PodRunner | undefined;

beforeAll(async () => {
  env = await runnerNamespace('pod-capacity');
});

afterAll(async () => {
  await runner?.close();
});

describe('capacity', () => {
  it('runs 20 tasks through capacity 5 and a pods=3 ResourceQuota: quota refusals requeue, every task finishes', async () => {
    await enforcedPodQuota(env.namespace, 'three-pods', 3);
    runner = await startRunner(env, { capacity: { total: 5, perType: { heavy: 1 } }, requeueDelayMs: 200 });
    let mostPods = 0;
    let mostHeavy = 0;
    let requeued = 0;
    const watching = (async () => {
      for await (const status of runner!.events()) {
        if (status.phase === 'queued' && status.message?.startsWith('requeued')) requeued += 1;
        const active = runner!.list({ phase: ['pending', 'running'] });
        mostPods = Math.max(mostPods, active.length);
        mostHeavy = Math.max(mostHeavy, active.filter((s) => s.taskType === 'heavy').length);
      }
    })();
    const ids = Array.from({ length: 20 }, (_, i) => `cap-${i}`);
    await Promise.all(ids.map((taskId, i) => runner!.submit({ taskId, taskType: i % 4 === 0 ? 'heavy' : 'light', ...exits(0, { runMs: 300 }) })));
    const results = await Promise.all(ids.map((id) => runner!.result(id)));
    expect(results.filter((r) => r.phase !== 'succeeded')).toEqual([]);
    expect(mostPods).toBeLessThanOrEqual(5);
    expect(mostHeavy).toBe(1);
    expect(requeued).toBeGreaterThan(0);
    await waitFor(async () => (await runnerPods(env.namespace)).length === 0, 15_000, 'every pod to be deleted');
    await runner.close();
    await watching;
  });
});
