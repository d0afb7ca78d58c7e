import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { onRealNode, serverWait, signalContainer } from '@rollcall/tools/testenv';
import type { PodRunner, PodTemplateSpec } from '../src/index.js';
import { admin, runnerNamespace, startRunner } from './runner-env.js';

/** One task on the real node: a process that really runs and really exits. */
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;

beforeAll(async () => {
  env = await runnerNamespace('real-node');
  // no pod is kept: a follower that first learns of the task at its end reads the captured log
  runner = await startRunner(env, { templates: [{ name: 'real', template: { spec: onRealNode({ containers: [{ name: 'main' }] }) as PodTemplateSpec['spec'] } }] });
});

afterAll(async () => {
  await runner?.close();
});

describe('a task on the real node', () => {
  it('ends with its process exit code, the termination message from its file, and its logs', async () => {
    const script = [
      "console.log('starting');",
      "setTimeout(() => { console.log('halfway'); }, 300);",
      "setTimeout(() => { console.error('done'); require('fs').writeFileSync('/dev/termination-log', JSON.stringify({ rows: 12 })); process.exit(3); }, 600);",
    ].join('\n');
    await runner.submit({ taskId: 'smoke', taskType: 'smoke', command: ['node', '-e', script] });
    const lines: string[] = [];
    for await (const line of runner.logs('smoke', { follow: true })) lines.push(line.text);
    const status = await runner.result('smoke');
    expect(status).toMatchObject({ phase: 'failed', exitCode: 3, terminationMessage: '{"rows":12}', result: { rows: 12 } });
    expect(lines).toEqual(['starting', 'halfway', 'done']);
  });

  it('a follower reads a succeeded task to its last line, though its pod is deleted as the container exits', async () => {
    // the task ends when told (SIGUSR2), after the follower has its first line. The handler comes before that
    // line: the process is its container's pid 1, and the kernel drops a signal that pid 1 has no handler for,
    // so a SIGUSR2 sent on seeing the line, should the process be descheduled between printing it and
    // installing the handler (a loaded machine), would leave the task running and the follower waiting.
    const script = "process.on('SIGUSR2', () => { console.log('done'); process.exit(0); }); console.log('starting'); setInterval(() => {}, 1000);";
    await runner.submit({ taskId: 'told', taskType: 'smoke', command: ['node', '-e', script] });
    for await (const status of runner.events('told')) if (status.phase === 'running') break;
    const lines: string[] = [];
    const follow = runner.logs('told', { follow: true });
    const first = await follow.next();
    lines.push(first.value.text);
    const { podName } = runner.get('told')!;
    signalContainer(await admin.core.readNamespacedPod({ name: podName, namespace: env.namespace }), 'main', 'SIGUSR2');
    for await (const line of follow) lines.push(line.text);
    expect(lines).toEqual(['starting', 'done']);
    expect(await runner.result('told')).toMatchObject({ phase: 'succeeded', exitCode: 0 });
    await waitFor(() => admin.core.readNamespacedPod({ name: podName, namespace: env.namespace }).then(() => false, () => true), 30_000, serverWait({ what: 'the succeeded pod deleted' }));
  });
});
