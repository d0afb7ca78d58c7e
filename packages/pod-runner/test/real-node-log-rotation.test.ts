import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@rollcall/conformance';
import { ApiClient, loadKubeConfig } from '@rollcall/kube-client';
import { onRealNode, proxiedKubeconfig, realNode, serverWait, signalContainer, type TcpProxy, waitForPod } from '@rollcall/tools/testenv';
import type { V1Pod } from '@kubernetes/client-node';
import { createLogCapture, type LogCapture } from '../src/log-capture.js';
import { readStoredLog } from '../src/log-read.js';
import { directoryLogSink, logFile } from '../src/log-sink.js';
import type { LogLine } from '../src/logs.js';
import type { Pod } from '../src/pod.js';
import type { TaskStatus } from '../src/task.js';
import { admin } from './runner-env.js';

/**
 * The capture's follow at the container's exit, held back behind a log file the
 * kubelet rotated (128Ki, checked every 3 s: tools' kubelet.ts): the node serves
 * a read without `follow` from the current file only, so the rotated file's
 * lines the follow has not passed on yet reach the capture through it alone.
 */
let namespace: string;
let dir: string;
let proxy: TcpProxy;
let client: ApiClient;
const warnings: unknown[] = [];
const logger = { debug() {}, info() {}, warn: (...args: unknown[]) => void warnings.push(args), error: (...args: unknown[]) => void warnings.push(args) };

beforeAll(async () => {
  namespace = await admin.namespace('log-rotation', { forPods: true });
  dir = mkdtempSync(join(tmpdir(), 'rollcall-log-rotation-'));
  const proxied = await proxiedKubeconfig();
  proxy = proxied.proxy;
  client = new ApiClient(loadKubeConfig({ kubeconfig: proxied.kubeconfig }), 10_000, 'rollcall/test (log rotation)');
});

afterAll(async () => {
  client?.close();
  await proxy?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The kubelet's rotated files of the pod's container `main` (`0.log.<time>`, `.gz` once compressed). */
function rotatedFiles(podName: string): string[] {
  const root = realNode().podLogsDir;
  const podDir = readdirSync(root).find((d) => d.startsWith(`${namespace}_${podName}_`));
  const container = podDir && join(root, podDir, 'main');
  if (!container || !existsSync(container)) return [];
  return readdirSync(container).filter((f) => f !== '0.log');
}

// 10 numbered lines; on the first SIGUSR2 3000 more in one write (~190 KiB, over the rotation size);
// on the second 10 more and a last line without a newline, then the exit
const SCRIPT = [
  "let n = 0; const lines = (k) => { let s = ''; for (let i = 0; i < k; i += 1) s += `n=${++n} ${'x'.repeat(50)}\\n`; return s; };",
  'let signals = 0;',
  "process.on('SIGUSR2', () => {",
  '  signals += 1;',
  '  if (signals === 1) process.stdout.write(lines(3000));',
  "  else process.stdout.write(lines(10), () => process.stdout.write(`last ${n}, no newline`, () => process.exit(0)));",
  '});',
  'process.stdout.write(lines(10));',
  'setInterval(() => {}, 60_000);',
].join('\n');

describe('the capture of a log the kubelet rotated', () => {
  it('at the exit, keeps a follow that is behind the current file until it has passed on the rotated lines: every line once', async () => {
    const podName = 'rotated-under-follow';
    await admin.core.createNamespacedPod({
      namespace,
      body: { metadata: { name: podName }, spec: onRealNode({ restartPolicy: 'Never', terminationGracePeriodSeconds: 0, containers: [{ name: 'main', command: ['node', '-e', SCRIPT] }] }) },
    });
    const running = await waitForPod(admin.core, namespace, podName, 'main running', (p) => p.status?.containerStatuses?.some((c) => c.name === 'main' && c.state?.running) === true);
    const sink = directoryLogSink(dir);
    const capture = createLogCapture({ sink }, { client, logger, namespace, runner: 'rollcall' }, false) as LogCapture;
    const status = { taskId: 'rotated', attempt: 1, podName } as TaskStatus;
    let ended = false;
    capture.observe(status, running as Pod, 'main', true, () => ended);
    const key = capture.key(status);
    const stored = () => {
      const file = logFile(dir, key);
      return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0;
    };
    await waitFor(() => stored() === 10, 30_000, () => `the capture to store the first 10 lines (stored ${stored()})`);

    // the follow's connection stops passing bytes on (none is lost: TCP holds them); new connections go through
    proxy.cut('stall', { scope: 'open' });
    signalContainer(running, 'main', 'SIGUSR2');
    await waitFor(() => rotatedFiles(podName).length > 0, 30_000, serverWait({ what: 'the kubelet to rotate the container log' }));
    signalContainer(running, 'main', 'SIGUSR2');
    const terminated: V1Pod = await waitForPod(admin.core, namespace, podName, 'main terminated', (p) => p.status?.containerStatuses?.some((c) => c.name === 'main' && c.state?.terminated) === true);
    expect(terminated.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(0);

    // the watch sees the exit while the follow is still in the rotated file; then its connection passes bytes on again
    ended = true;
    capture.observe(status, terminated as Pod, 'main', true, () => ended);
    proxy.heal();
    await capture.untilLogged(status, terminated as Pod);

    const lines: LogLine[] = [];
    for await (const line of readStoredLog(sink, key, {})) lines.push(line);
    const texts = lines.map((l) => l.text);
    const expected = [...Array.from({ length: 3020 }, (_, i) => `n=${i + 1} ${'x'.repeat(50)}`), 'last 3020, no newline'];
    const wrong = texts.findIndex((t, i) => t !== expected[i]);
    expect(wrong === -1 ? undefined : { at: wrong, saw: texts.slice(Math.max(0, wrong - 1), wrong + 2).map((t) => t.slice(0, 10)) }).toBeUndefined();
    expect(texts).toHaveLength(expected.length);
    expect(warnings).toEqual([]);
    await capture.stopAll();
    await admin.core.deleteNamespacedPod({ name: podName, namespace, gracePeriodSeconds: 0 });
  });
});
