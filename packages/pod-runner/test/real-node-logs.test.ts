import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { onRealNode, requireTestEnv, serverWait } from '@rollcall/tools/testenv';
import { logFile, type LogLine, type PodRunner, type PodTemplateSpec } from '../src/index.js';
import { admin, runnerNamespace, startRunner } from './runner-env.js';

/** A task's log on the real node, whose kubelet rotates container logs at 128Ki, checked every 3 s (tools' kubelet.ts). */
let env: { namespace: string; kubeconfig: string };
let runner: PodRunner;
let dir: string;

beforeAll(async () => {
  env = await runnerNamespace('real-node-logs');
  dir = mkdtempSync(join(tmpdir(), 'rollcall-task-logs-'));
  runner = await startRunner(env, { logs: { dir }, templates: [{ name: 'real', template: { spec: onRealNode({ containers: [{ name: 'main' }] }) as PodTemplateSpec['spec'] } }] });
});

afterAll(async () => {
  await runner?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The kubelet's rotated files of a pod's container: `0.log.<time>` (and `.gz` once compressed). */
function rotatedFiles(namespace: string, podName: string): string[] {
  const root = requireTestEnv('kubernetes').realNode!.podLogsDir;
  const podDir = readdirSync(root).find((d) => d.startsWith(`${namespace}_${podName}_`));
  const container = podDir && join(root, podDir, 'main');
  if (!container || !existsSync(container)) return [];
  return readdirSync(container).filter((f) => f !== '0.log');
}

/** Every `n=<number>` line's number once, in order, from 1, and the last line without its newline. */
function expectEveryLineOnce(lines: LogLine[]): number {
  const last = lines.at(-1)?.text ?? '';
  const match = /^last (\d+), no newline$/.exec(last);
  expect(match, `the last line: ${JSON.stringify(last)}`).not.toBeNull();
  const count = Number(match![1]);
  const numbers = lines.slice(0, -1).map((l) => l.text);
  const wrong = numbers.findIndex((text, i) => text !== `n=${i + 1}`);
  expect(wrong === -1 ? undefined : { at: wrong, saw: numbers.slice(Math.max(0, wrong - 2), wrong + 3) }).toBeUndefined();
  expect(numbers).toHaveLength(count);
  return count;
}

describe('a task log on the real node', () => {
  it('is captured line by line across the kubelet\'s log rotation, a last line without a newline included, and served after the pod is gone', async () => {
    // 100 numbered lines every 10 ms for 10 s (far more than 128Ki between two rotation checks), then a line with no newline
    const script = [
      'let n = 0; const end = Date.now() + 10000;',
      "const burst = () => { let s = ''; for (let i = 0; i < 100; i += 1) s += `n=${++n}\\n`; process.stdout.write(s);",
      "  if (Date.now() < end) setTimeout(burst, 10); else process.stdout.write(`last ${n}, no newline`, () => process.exit(0)); };",
      'burst();',
    ].join('\n');
    await runner.submit({ taskId: 'rotating', taskType: 'logs', command: ['node', '-e', script] });
    const followed: LogLine[] = [];
    const following = (async () => {
      for await (const line of runner.logs('rotating', { follow: true })) followed.push(line);
    })();
    for await (const status of runner.events('rotating')) if (status.phase === 'running') break;
    const { podName } = runner.get('rotating')!;
    // what the kubelet rotated while the task ran (an observation, not a wait: the task ends by itself)
    const rotated = new Set<string>();
    const watching = setInterval(() => {
      for (const file of rotatedFiles(env.namespace, podName)) rotated.add(file.replace(/\.gz$/, ''));
    }, 200);
    const status = await runner.result('rotating');
    clearInterval(watching);
    expect(status).toMatchObject({ phase: 'succeeded', exitCode: 0 });
    await waitFor(() => admin.core.readNamespacedPod({ name: podName, namespace: env.namespace }).then(() => false, () => true), 30_000, serverWait({ what: 'the succeeded pod deleted' }));
    await following;
    console.log(`[real-node-logs] the kubelet rotated the task's log ${rotated.size} times`);
    expect(rotated.size).toBeGreaterThanOrEqual(2);

    const stored: LogLine[] = [];
    for await (const line of runner.logs('rotating')) stored.push(line);
    const count = expectEveryLineOnce(stored);
    console.log(`[real-node-logs] ${count} numbered lines captured`);
    expect(followed).toEqual(stored);
    expect(existsSync(logFile(dir, { namespace: env.namespace, runner: 'rollcall', taskId: 'rotating', attempt: 1 }))).toBe(true);
  });
});
