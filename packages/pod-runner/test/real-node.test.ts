import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onRealNode } from '@rollcall/tools/testenv';
import type { PodRunner, PodTemplateSpec } from '../src/index.js';
import { runnerNamespace, startRunner } from './runner-env.js';

/** One task on the real node: a process that really runs and really exits. */
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;

beforeAll(async () => {
  env = await runnerNamespace('real-node');
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
});
