import { appendFileSync, renameSync } from 'node:fs';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rejection, waitFor } from '@rollcall/conformance';
import { ErrorCode } from '@rollcall/core';
import { AuditLog, type AuditWindow, KWOK_LOG_CONTAINER, KWOK_POD_ANNOTATIONS, kwokContainerLogPath, proxiedKubeconfig, requireTestEnv, serverWait, type TcpProxy } from '@rollcall/tools/testenv';
import { ApiClient, loadKubeConfig } from '@rollcall/kube-client';
import type { LogLine, PodRunner } from '../src/index.js';
import { type LogOptions, logStream, MAX_LOG_READ_BYTES } from '../src/logs.js';
import { admin, exits, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

let runner: PodRunner;
let namespace: string;
let start: () => Promise<PodRunner>;
let proxy: TcpProxy;
let kubeconfig: string;
let written = 0;

/** Appends numbered lines to the log kwok serves for every `rollcall-logs` container, each with its own timestamp. */
function writeLines(count: number, prefix: string): string[] {
  const texts: string[] = [];
  for (let i = 0; i < count; i += 1) {
    written += 1;
    const text = `${prefix} line ${written}`;
    appendFileSync(kwokContainerLogPath(), `${new Date().toISOString().replace('Z', `${String(written % 1000).padStart(3, '0')}000Z`)} stdout F ${text}\n`);
    texts.push(text);
  }
  return texts;
}

/** The API server's audit log; its marker, a read of an absent pod, shows that every earlier request was logged. */
let audit: AuditLog;

/** The reads of `pod`'s log received in `window` (each once, with its answer's code), ending it now. */
async function logReads(window: AuditWindow, pod: string) {
  return (await audit.requests(window)).filter((e) => e.objectRef?.subresource === 'log' && e.objectRef.name === pod);
}

/** The `limitBytes` of every read of `pod`'s log in `window` (NaN: none asked). */
async function logReadLimits(window: AuditWindow, pod: string): Promise<number[]> {
  return (await logReads(window, pod)).map((e) => Number(new URL(e.requestURI ?? '', 'http://api').searchParams.get('limitBytes') ?? NaN));
}

/** Appends `count` lines stamped now, each `size` bytes of text; resolves with their texts and the second they share (RFC 3339, whole). */
async function writeSecond(count: number, prefix: string, size: number): Promise<{ texts: string[]; second: string }> {
  // one second each: a read resumes at its last line's second
  const start = Math.floor(Date.now() / 1000);
  await waitFor(() => Math.floor(Date.now() / 1000) > start, 2000, 'the next second');
  const now = new Date();
  const texts: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const head = `${prefix} ${i} `;
    const text = head + 'x'.repeat(Math.max(0, size - head.length));
    appendFileSync(kwokContainerLogPath(), `${now.toISOString().replace('Z', `${String(i + 1).padStart(6, '0')}Z`)} stdout F ${text}\n`);
    texts.push(text);
  }
  return { texts, second: `${now.toISOString().slice(0, 19)}Z` };
}

/** How many reads of `pod`'s log without `follow` in `window` were refused. */
async function refusedLogReads(window: AuditWindow, pod: string): Promise<number> {
  return (await logReads(window, pod)).filter((e) => !e.requestURI?.includes('follow=true') && (e.responseStatus?.code ?? 0) >= 400).length;
}

beforeAll(async () => {
  const env = await runnerNamespace('pod-logs');
  namespace = env.namespace;
  kubeconfig = env.kubeconfig;
  audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => void (await admin.core.readNamespacedPod({ name, namespace }).catch(() => undefined)));
  const proxied = await proxiedKubeconfig(env.kubeconfig);
  proxy = proxied.proxy;
  start = () => startRunner({ namespace: env.namespace, kubeconfig: proxied.kubeconfig }, { templates: [{ name: 'logging', template: { spec: { containers: [{ name: KWOK_LOG_CONTAINER, image: 'logger:1' }] } } }] });
  runner = await start();
  appendFileSync(kwokContainerLogPath(), ''); // the file is shared by every such container: only lines from now on count
});

afterAll(async () => {
  await runner?.close();
  await proxy?.close();
});

describe('logs', () => {
  it('follows a task\'s log across a cut connection without a line twice or a line lost', async () => {
    await runner.submit({ taskId: 'follow-me', taskType: 'report' });
    await waitFor(() => runner.get('follow-me')?.phase === 'running', 15_000, 'the task to run');
    const since = new Date().toISOString();
    const before = writeLines(5, 'before');
    const seen: LogLine[] = [];
    const reading = (async () => {
      for await (const line of runner.logs('follow-me', { follow: true, sinceTime: since.replace(/\.\d+Z$/, 'Z') })) {
        if (!line.text.startsWith('before') && !line.text.startsWith('after')) continue;
        seen.push(line);
        if (seen.length === 10) break;
      }
    })();
    await waitFor(() => seen.length === 5, 15_000, () => `the first five lines (saw ${seen.length})`);
    proxy.cut('reset', { scope: 'open' }); // the open streams die, new connections go through
    const after = writeLines(5, 'after');
    await reading;
    expect(seen.map((l) => l.text)).toEqual([...before, ...after]);
    await runner.cancel('follow-me', { graceSeconds: 0 });
  });

  it('reads the last lines without following, and refuses an unknown task', async () => {
    await runner.submit({ taskId: 'tail-me', taskType: 'report' });
    await waitFor(() => runner.get('tail-me')?.phase === 'running', 15_000, 'the task to run');
    const last = writeLines(3, 'tail');
    const lines: string[] = [];
    for await (const line of runner.logs('tail-me', { tailLines: 2 })) lines.push(line.text);
    expect(lines).toEqual(last.slice(1));
    expect((await rejection(async () => runner.logs('no-such-task'))).code).toBe(ErrorCode.NOT_FOUND);
    await runner.cancel('tail-me', { graceSeconds: 0 });
  });

  it('serves a task\'s captured log after its pod is gone, and follows it to the end', async () => {
    await runner.submit({ taskId: 'outlive-me', taskType: 'report', ...exits(0, { runMs: 3000 }) });
    await waitFor(() => runner.get('outlive-me')?.phase === 'running', 15_000, 'the task to run');
    // kwok serves one file for every such container, this instance's earlier runs included: only this run's lines count
    const prefix = `kept-${process.pid}-${Date.now()}`;
    const following: string[] = [];
    const reading = (async () => {
      for await (const line of runner.logs('outlive-me', { follow: true })) if (line.text.startsWith(prefix)) following.push(line.text);
    })();
    const kept = writeLines(4, prefix);
    await waitFor(() => following.length === 4, 15_000, () => `the follower to see the lines (saw ${following.length})`);
    expect((await runner.result('outlive-me')).phase).toBe('succeeded');
    await waitFor(async () => (await runnerPods(namespace)).every((p) => !p.metadata?.name?.includes('outlive-me')), 15_000, 'the pod to be deleted');
    await reading;
    const served: string[] = [];
    for await (const line of runner.logs('outlive-me')) if (line.text.startsWith(prefix)) served.push(line.text);
    expect(served).toEqual(kept);
    expect(following).toEqual(kept);
    const tail: string[] = [];
    for await (const line of runner.logs('outlive-me', { tailLines: 2 })) tail.push(line.text);
    expect(tail).toEqual(kept.slice(2));
  });

  it('a runner started again continues the capture after what was stored: no line twice, none lost', async () => {
    const prefix = `carried-${process.pid}-${Date.now()}`;
    await runner.submit({ taskId: 'carry-on', taskType: 'report', ...exits(0, { runMs: 10_000 }) });
    await waitFor(() => runner.get('carry-on')?.phase === 'running', 15_000, 'the task to run');
    const before = writeLines(3, prefix);
    let seen = 0;
    for await (const line of runner.logs('carry-on', { follow: true })) if (line.text.startsWith(prefix) && ++seen === 3) break;
    await runner.close();
    const meanwhile = writeLines(2, prefix); // no runner up: the kubelet's copy only
    runner = await start();
    const after = writeLines(2, prefix);
    expect((await runner.result('carry-on')).phase).toBe('succeeded');
    const served: string[] = [];
    for await (const line of runner.logs('carry-on')) if (line.text.startsWith(prefix)) served.push(line.text);
    expect(served).toEqual([...before, ...meanwhile, ...after]);
  });

  it('a capture whose read at the container\'s exit is refused for a moment reads again: the last line, without a newline, is kept', async () => {
    const prefix = `exit-${process.pid}-${Date.now()}`;
    // runs until the test gives it an exit code (kwok's stage then ends its container)
    await runner.submit({ taskId: 'read-again', taskType: 'report' });
    await waitFor(() => runner.get('read-again')?.phase === 'running', 15_000, 'the task to run');
    const { podName } = runner.get('read-again')!;
    const following: string[] = [];
    const reading = (async () => {
      for await (const line of runner.logs('read-again', { follow: true })) if (line.text.startsWith(prefix)) following.push(line.text);
    })();
    const kept = writeLines(2, prefix);
    await waitFor(() => following.length === 2, 15_000, () => `the follower to see the lines (saw ${following.length})`);
    // a last line without a newline: a follow holds it until its stream ends, so the read after the exit is what stores it
    const path = kwokContainerLogPath();
    appendFileSync(path, `${new Date().toISOString().replace('Z', '999000Z')} stdout P ${prefix} last\n`);
    try {
      // the node answers 400 to a read of a log file that is not there (as during a rotation's rename): the read after the exit fails once
      renameSync(path, `${path}.away`);
      const window = audit.open();
      try {
        await admin.core.patchNamespacedPod({ name: podName, namespace, body: { metadata: { annotations: { [KWOK_POD_ANNOTATIONS.exitCode]: '0' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
        // at the exit the capture first asks whether the node's current file holds its last line (refused: it cannot tell, so it
        // keeps its follow until that is silent), then reads the rest: the file stays away until that read was refused too
        await waitFor(async () => (await refusedLogReads(window, podName)) >= 2, 60_000, serverWait({ what: 'the capture\'s read after the exit refused' }));
      } finally {
        renameSync(`${path}.away`, path);
      }
      expect((await runner.result('read-again')).phase).toBe('succeeded');
      await reading;
    } finally {
      // every rollcall-logs container shares the file: end the partial line, or the next line written would continue it
      appendFileSync(path, `${new Date().toISOString()} stdout F \n`);
    }
    expect(following).toEqual([...kept, `${prefix} last`]);
    const served: string[] = [];
    for await (const line of runner.logs('read-again')) if (line.text.startsWith(prefix)) served.push(line.text);
    expect(served).toEqual(following);
  });

  it('every read of a pod\'s log asks for at most its byte bound; a longer log comes whole in more reads, a caller\'s limit holds across them, and a second (or a line) over the bound is PAYLOAD_TOO_LARGE', async () => {
    await runner.submit({ taskId: 'bounded', taskType: 'report' });
    await waitFor(() => runner.get('bounded')?.phase === 'running', 15_000, 'the task to run');
    const { podName } = runner.get('bounded')!;
    const prefix = `bounded-${process.pid}-${Date.now()}`;
    // about 8 lines of ~110 bytes (text and timestamp) a second, and one line of ~730 alone in its second
    const a = await writeSecond(8, `${prefix}-a`, 80);
    const b = await writeSecond(8, `${prefix}-b`, 80);
    const c = await writeSecond(1, `${prefix}-long`, 700);
    const all = [...a.texts, ...b.texts, ...c.texts];
    const client = new ApiClient(loadKubeConfig({ kubeconfig }), 10_000, 'rollcall/test (bounded log reads)');
    const quiet = { debug() {}, info() {}, warn() {}, error() {} };
    const read = async (options: LogOptions, readBytes?: number) => {
      const lines: string[] = [];
      const stream = logStream({ client, logger: quiet, namespace, podName: () => podName, container: KWOK_LOG_CONTAINER, options, ended: () => true, ...(readBytes ? { readBytes } : {}) });
      for await (const line of stream) if (line.text.startsWith(prefix)) lines.push(line.text);
      return lines;
    };
    const window = audit.open();
    try {
      // 2000 bytes a read: a resumed read re-reads its second and must hold the next line too
      expect(await read({ sinceTime: a.second }, 2000)).toEqual(all);
      const whole = await logReadLimits(window, podName);
      expect(whole.length).toBeGreaterThanOrEqual(2);
      expect(whole.every((limit) => limit > 0 && limit <= 2000), JSON.stringify(whole)).toBe(true);
      // the caller's limit counts text bytes across the reads, and stops at the line that reaches it
      const limited = await read({ sinceTime: a.second, limitBytes: 1000 }, 1200);
      const sizes = limited.map((t) => Buffer.byteLength(t) + 1);
      expect(limited).toEqual(all.slice(0, limited.length));
      expect(sizes.reduce((x, y) => x + y, 0)).toBeGreaterThanOrEqual(1000);
      expect(sizes.slice(0, -1).reduce((x, y) => x + y, 0)).toBeLessThan(1000);
      // a read resumes from its last line's second (sinceTime has whole seconds): a second over the bound cannot be passed, and says so
      const err = await rejection(read({ sinceTime: b.second }, 500));
      expect(err.code).toBe(ErrorCode.PAYLOAD_TOO_LARGE);
      expect(err.message).toContain(`more than 500 bytes within the second of ${b.second}`);
      // so is one line longer than the bound
      expect((await rejection(read({ sinceTime: c.second }, 500))).code).toBe(ErrorCode.PAYLOAD_TOO_LARGE);
      // the runner's own reads carry the default bound
      const runnerWindow = audit.open();
      const served: string[] = [];
      for await (const line of runner.logs('bounded', { sinceTime: a.second })) if (line.text.startsWith(prefix)) served.push(line.text);
      expect(served).toEqual(all);
      const limits = await logReadLimits(runnerWindow, podName);
      expect(limits.length).toBeGreaterThan(0);
      expect(limits.every((l) => l === MAX_LOG_READ_BYTES), JSON.stringify(limits)).toBe(true);
    } finally {
      client.close();
      await runner.cancel('bounded', { graceSeconds: 0 });
    }
  });
});
