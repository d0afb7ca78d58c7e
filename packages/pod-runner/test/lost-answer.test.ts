import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireTestEnv } from '@rollcall/tools/testenv';
import type { PodRunner, TaskStatus } from '../src/index.js';
import { exits, runnerNamespace, runnerPods, startRunner } from './runner-env.js';

/**
 * An HTTP proxy in front of the API server (which it reaches over TLS) that
 * forwards every request and, for the first pod create, waits for the API
 * server's answer — the pod stored — and then closes the client's connection
 * instead of passing the answer on: a create whose answer was lost after it landed.
 */
async function answerDroppingProxy() {
  const kube = requireTestEnv('kubernetes');
  const upstream = new URL(kube.server);
  const ca = readFileSync(kube.caFile);
  const creates: { status: number; dropped: boolean }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url!, 'http://proxy');
      const isCreate = req.method === 'POST' && path.pathname.endsWith('/pods') && !path.searchParams.has('dryRun');
      const up = https.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host }, ca }, (answer) => {
        const drop = isCreate && creates.length === 0;
        if (isCreate) creates.push({ status: answer.statusCode!, dropped: drop });
        if (drop) {
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => req.socket.destroy());
      res.on('close', () => up.destroy());
      up.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    creates,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** A copy of `source` (a JSON kubeconfig) whose cluster is the plain-HTTP `server` (client-node takes http only without TLS verification). */
function plainHttpKubeconfig(source: string, server: string): string {
  const config = JSON.parse(readFileSync(source, 'utf8')) as { clusters: { cluster: Record<string, unknown> }[] };
  for (const c of config.clusters) c.cluster = { server, 'insecure-skip-tls-verify': true };
  const file = `${source}.via-http-proxy.json`;
  writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
  return file;
}

let env: { namespace: string; kubeconfig: string };
let proxy: Awaited<ReturnType<typeof answerDroppingProxy>>;
let runner: PodRunner | undefined;
const reports: TaskStatus[] = [];

beforeAll(async () => {
  env = await runnerNamespace('pod-lost-answer');
  proxy = await answerDroppingProxy();
});

afterAll(async () => {
  await runner?.close();
  await proxy.close();
});

describe('a pod create whose answer is lost after the API server stored the pod', () => {
  it('reads the pod back and adopts it: the task runs once, as attempt 1, and succeeds', async () => {
    runner = await startRunner({ ...env, kubeconfig: plainHttpKubeconfig(env.kubeconfig, proxy.url) }, {
      name: 'lost-answer',
      onStatus: (s) => reports.push(s),
      templates: [{ name: 'default', template: { spec: { containers: [{ name: 'main', image: 'registry.example/task:1' }] } }, retry: { maxAttempts: 3, backoffMs: 100, retryOn: { reasons: ['Deleted'] } } }],
    });
    const submitted = await runner.submit({ taskId: 'landed', taskType: 'report', ...exits(0, { runMs: 500 }) });
    expect(submitted).toMatchObject({ attempt: 1, podName: 'lost-answer-landed-1' });
    expect(proxy.creates).toEqual([{ status: 201, dropped: true }]); // the API server stored it; the runner never heard
    expect(await runner.result('landed')).toMatchObject({ phase: 'succeeded', attempt: 1, podName: 'lost-answer-landed-1' });
    expect(proxy.creates).toHaveLength(1); // never created again
    expect(reports.filter((r) => r.reason === 'CreateFailed')).toEqual([]);
    expect((await runnerPods(env.namespace, 'lost-answer')).filter((p) => p.metadata?.name !== 'lost-answer-landed-1')).toEqual([]);
  });
});
