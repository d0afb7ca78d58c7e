import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { AuditLog, requireTestEnv } from '@rollcall/tools/testenv';
import type { PodRunner } from '../src/index.js';
import { admin, exits, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;

beforeAll(async () => {
  env = await runnerNamespace('pod-requests');
  runner = await startRunner(env);
});

afterAll(async () => {
  await runner?.close();
});

describe('API requests, from the API server\'s audit log', () => {
  it('costs its record\'s create, the pod\'s create, one log stream (the capture), patch and delete per task, and at most two record updates, and nothing else: no per-task GET, no poll', async () => {
    const audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => {
      await admin.core.readNamespacedPod({ namespace: env.namespace, name }).catch(() => undefined);
    });
    const window = audit.open();
    const ids = Array.from({ length: 10 }, (_, i) => `audited-${i}`);
    await Promise.all(ids.map((taskId) => runner.submit({ taskId, taskType: 'report', ...exits(0, { runMs: 2000 }) })));
    for (const id of ids) expect((await runner.result(id)).phase).toBe('succeeded');
    await waitFor(async () => (await runnerPods(env.namespace)).length === 0, 15_000, 'every pod to be deleted');
    const user = `system:serviceaccount:${env.namespace}:rollcall-pod-runner`;
    const counts: Record<string, number> = {};
    const conflicts: string[] = [];
    for (const e of await audit.requests(window)) {
      if (e.user?.username !== user) continue;
      const key = `${e.verb} ${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
      const code = e.responseStatus?.code ?? 200;
      // a conditional write refused for a stale resourceVersion (the pod's status written between the read and the
      // release patch) is re-decided and sent again: the refused one is counted apart, and only a few may happen
      if (code === 409) conflicts.push(key);
      else counts[key] = (counts[key] ?? 0) + 1;
    }
    // each watch request lasts up to watchTimeoutSeconds; none started in this window unless a stream dropped
    const { ['watch pods']: watches = 0, ['update configmaps']: recordUpdates = 0, ...perTask } = counts;
    expect(perTask).toEqual({ 'create configmaps': 10, 'create pods': 10, 'get pods/log': 10, 'patch pods': 10, 'delete pods': 10 });
    // the task's record: its end stored, its acknowledgement stored — two updates per task
    expect(recordUpdates).toBe(20);
    expect(watches).toBeLessThanOrEqual(1);
    expect(conflicts.every((k) => k === 'patch pods' || k === 'update configmaps'), conflicts.join(', ')).toBe(true);
    expect(conflicts.length).toBeLessThanOrEqual(ids.length);
  });
});
