import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onRealNode } from '@rollcall/tools/testenv';
import type { PodRunner, PodTemplateSpec } from '../src/index.js';
import { runnerNamespace, startRunner } from './runner-env.js';

/**
 * The termination message as the kubelet reads it: from the file, at most its
 * last 4096 bytes (kubelet MaxContainerTerminationMessageLength); and, under the
 * FallbackToLogsOnError policy the runner sets, a failed task without a message
 * gets its log's last 80 lines, at most their last 2048 bytes.
 */
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;

const spec = (s: Record<string, unknown>) => onRealNode(s as never) as PodTemplateSpec['spec'];

beforeAll(async () => {
  env = await runnerNamespace('rn-message');
  runner = await startRunner(env, {
    templates: [
      // four containers: the pod's 12288 bytes of messages shared out, 3072 each
      { name: 'four', taskTypes: ['four'], template: { spec: spec({ initContainers: [1, 2, 3].map((i) => ({ name: `init-${i}`, command: ['node', '-e', '0'] })), containers: [{ name: 'main' }] }) } },
      { name: 'real', template: { spec: spec({ containers: [{ name: 'main' }] }) } },
    ],
  });
});

afterAll(async () => {
  await runner?.close();
});

/** Runs a script as a task and returns its terminal status. */
async function run(taskId: string, script: string, taskType = 'message') {
  await runner.submit({ taskId, taskType, command: ['node', '-e', script] });
  return runner.result(taskId);
}

/** `count` numbered lines of `width` bytes each, newline included. */
const numbered = (count: number, width: number) => Array.from({ length: count }, (_, i) => `${String(i + 1).padStart(width - 1, '0')}\n`).join('');
/** A JSON object of exactly `bytes` bytes. */
const jsonOf = (bytes: number) => JSON.stringify({ rows: 12, pad: 'x'.repeat(bytes - JSON.stringify({ rows: 12, pad: '' }).length) });
const writesMessage = (text: string, exitCode: number) => `require('fs').writeFileSync('/dev/termination-log', ${JSON.stringify(text)}); process.exit(${exitCode});`;

describe('the termination message file on the real node', () => {
  it('keeps a message under the limit whole: a 4095-byte JSON is the result', async () => {
    const text = jsonOf(4095);
    const status = await run('json-4095', writesMessage(text, 0));
    expect(status).toMatchObject({ phase: 'succeeded', terminationMessage: text });
    expect(status.result).toEqual(JSON.parse(text));
  });

  it('cuts a longer message to its last 4096 bytes (the head is lost): no result, the tail as the message', async () => {
    const lines = numbered(600, 10); // 6000 bytes
    const status = await run('long-text', writesMessage(lines, 0));
    expect(status).toMatchObject({ phase: 'succeeded', exitCode: 0 });
    expect(status.terminationMessage).toBe(lines.slice(-4096));
    const json = jsonOf(5000);
    const cut = await run('long-json', writesMessage(json, 0));
    expect(cut.terminationMessage).toBe(json.slice(-4096));
    expect(cut.result).toBeUndefined();
  });

  it('keeps only the first 3072 bytes in a pod of four containers (the pod\'s 12288 shared out), a result just below that whole', async () => {
    const lines = numbered(350, 10); // 3500 bytes: under the file's 4096
    const status = await run('four-text', writesMessage(lines, 0), 'four');
    expect(status).toMatchObject({ phase: 'succeeded', terminationMessage: lines.slice(0, 3072) });
    const text = jsonOf(3071);
    expect(await run('four-json', writesMessage(text, 0), 'four')).toMatchObject({ terminationMessage: text, result: JSON.parse(text) });
  });

  it('leaves a succeeded task that wrote no message without one, whatever it logged', async () => {
    const status = await run('quiet-success', "console.log('{\"rows\":1}'); process.exit(0);");
    expect(status).toMatchObject({ phase: 'succeeded', exitCode: 0 });
    expect(status.terminationMessage).toBeUndefined();
    expect(status.result).toBeUndefined();
  });
});

describe('FallbackToLogsOnError on the real node', () => {
  it('gives a failed task that wrote no message its log\'s last 80 lines', async () => {
    const lines = numbered(100, 8);
    const status = await run('fallback-lines', `process.stdout.write(${JSON.stringify(lines)}, () => process.exit(2));`);
    expect(status).toMatchObject({ phase: 'failed', reason: 'Error', exitCode: 2 });
    expect(status.terminationMessage).toBe(lines.split('\n').slice(-81).join('\n'));
  });

  it('bounds that tail at 2048 bytes', async () => {
    const lines = numbered(200, 50);
    const status = await run('fallback-bytes', `process.stdout.write(${JSON.stringify(lines)}, () => process.exit(2));`);
    expect(status.terminationMessage).toBe(lines.slice(-2048));
  });

  it('keeps the message a failed task wrote, not its log', async () => {
    const status = await run('failed-message', `console.log('some log line'); ${writesMessage('bad input row 3', 4)}`);
    expect(status).toMatchObject({ phase: 'failed', exitCode: 4, terminationMessage: 'bad input row 3' });
  });

  it('parses a failed task\'s log tail as its result when that tail is one JSON value (a JSON logger\'s only line)', async () => {
    const status = await run('fallback-json', "console.log(JSON.stringify({ level: 50, msg: 'boom' })); process.exit(1);");
    expect(status).toMatchObject({ phase: 'failed', exitCode: 1, result: { level: 50, msg: 'boom' } });
  });
});
