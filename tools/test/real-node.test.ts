import { existsSync, readFileSync, readlinkSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { KubeAdmin } from '../testenv/kube/kube-admin.js';
import { onRealNode, realNode, waitForPod } from '../testenv/kube/real-node-pods.js';
import { waitFor } from '@rollcall/conformance';
import { serverWait } from '../testenv/process/server-wait.js';
import { captureHostState, diffHostState } from '../testenv/measure/host-state.js';
import { runProcess } from '../testenv/process/run-process.js';
import { processesUsingRoot } from '../testenv/process/strays.js';
import { SERVER_EXECUTABLES } from '../testenv/catalog.js';
import { toolsPackageDir } from '../testenv/env/paths.js';

const admin = new KubeAdmin();
let namespace: string;

beforeAll(async () => {
  namespace = await admin.namespace('real-node', { forPods: true });
});

afterAll(async () => {
  await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
});

const terminated = (pod: V1Pod) => pod.status?.containerStatuses?.[0]?.state?.terminated;

/** Runs `node -e script` in a pod on the real node until it exits; returns the pod and its log. */
async function runToExit(name: string, script: string, extra: Partial<V1Pod['spec']> = {}): Promise<{ pod: V1Pod; log: string }> {
  await admin.core.createNamespacedPod({
    namespace,
    body: { metadata: { name }, spec: onRealNode({ restartPolicy: 'Never', containers: [{ name: 'main', command: ['node', '-e', script] }], ...extra }) },
  });
  const pod = await waitForPod(admin.core, namespace, name, 'its container terminated', (p) => terminated(p) !== undefined);
  const log = await admin.core.readNamespacedPodLog({ name, namespace, container: 'main' });
  return { pod, log };
}

describe('the real node', () => {
  it('runs a container to its end: the process exit code, the termination message from its file, the log through the API server', async () => {
    const { pod, log } = await runToExit(
      'exit-three',
      `console.log('first line'); console.error('to stderr'); require('fs').writeFileSync('/dev/termination-log', JSON.stringify({ rows: 12 })); process.exit(3)`,
    );
    expect(pod.spec?.nodeName).toBe(realNode().name);
    expect(terminated(pod)).toMatchObject({ exitCode: 3, reason: 'Error', message: '{"rows":12}' });
    expect(log).toContain('first line\n');
    expect(log).toContain('to stderr\n');
    const phase = await waitForPod(admin.core, namespace, 'exit-three', 'phase Failed', (p) => p.status?.phase === 'Failed');
    expect(phase.status?.phase).toBe('Failed');
  });

  it('gives a pod the API server in-cluster, TLS verified by the mounted CA, and no way out of the namespace', async () => {
    const script = `
      const fs = require('fs'), https = require('https'), net = require('net'), dns = require('dns');
      const dir = '/var/run/secrets/kubernetes.io/serviceaccount';
      const result = {};
      const done = () => { if (Object.keys(result).length === 3) { console.log(JSON.stringify(result)); process.exit(0); } };
      https.get({ host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT, path: '/version',
        ca: fs.readFileSync(dir + '/ca.crt'), headers: { authorization: 'Bearer ' + fs.readFileSync(dir + '/token', 'utf8') } },
        (res) => { let body = ''; res.on('data', (c) => body += c); res.on('end', () => { result.api = { status: res.statusCode, gitVersion: JSON.parse(body).gitVersion }; done(); }); })
        .on('error', (e) => { result.api = { error: e.code || e.message }; done(); });
      const started = Date.now();
      net.connect({ host: '192.0.2.1', port: 80 }).on('connect', () => { result.outside = 'connected'; done(); })
        .on('error', (e) => { result.outside = { code: e.code, ms: Date.now() - started }; done(); });
      dns.lookup('example.com', (e) => { result.dns = e ? e.code : 'resolved'; done(); });
    `;
    const { pod, log } = await runToExit('in-cluster', script, { automountServiceAccountToken: true });
    expect(terminated(pod)?.exitCode).toBe(0);
    const result = JSON.parse(log.trim().split('\n').pop()!) as { api: { status?: number; gitVersion?: string }; outside: { code?: string }; dns: string };
    expect(result.api).toEqual({ status: 200, gitVersion: expect.stringMatching(/^v1\./) });
    // no route: refused at once by the node, never sent anywhere
    expect(['ENETUNREACH', 'EHOSTUNREACH']).toContain(result.outside.code);
    expect(result.dns).not.toBe('resolved');
  });
});

describe('a second instance with a real node, beside the first', () => {
  const second = { ROLLCALL_TESTENV_ROOT: '/tmp/rollcall-testenv-node-selftest', ROLLCALL_TESTENV_PORT_BASE: '22000', ROLLCALL_TESTENV_REAL_NODE: '1', ROLLCALL_TESTENV_QUIET: '1' };
  const cli = (command: string[], timeoutMs: number) =>
    runProcess(process.execPath, [join(toolsPackageDir(), 'dist', 'testenv', 'cli.js'), ...command], { env: { ...process.env, ...second }, timeoutMs });

  it('comes up, runs a pod, and goes down leaving the machine as it found it: no process, namespace, cgroup, mount, address, route, rule or kernel setting', async () => {
    // a fresh instance: nothing of an earlier run's (its etcd keeps what was written)
    expect((await cli(['down'], 180_000)).code).toBe(0);
    rmSync(second.ROLLCALL_TESTENV_ROOT, { recursive: true, force: true });
    const before = captureHostState();
    const up = await cli(['up', 'kubernetes'], 300_000);
    expect(up.code, up.stderr).toBe(0);
    const env = JSON.parse(readFileSync(join(second.ROLLCALL_TESTENV_ROOT, 'env.json'), 'utf8')) as { kubernetes: { kubeconfig: string; realNode: { cgroupRoot: string } } };
    expect(env.kubernetes.realNode.cgroupRoot).not.toBe(realNode().cgroupRoot);
    const kc = new KubeConfig();
    kc.loadFromFile(env.kubernetes.kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    // a pod is refused until the controller manager has made the namespace's default service account
    await waitFor(() => core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' }).then(() => true, () => false), 60_000, serverWait({ what: 'the default service account' }));
    await core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'second' }, spec: onRealNode({ restartPolicy: 'Never', containers: [{ name: 'main', command: ['node', '-e', 'process.exit(7)'] }] }) },
    });
    const ran = await waitForPod(core, 'default', 'second', 'its container terminated', (p) => terminated(p) !== undefined, 120_000);
    expect(terminated(ran)?.exitCode).toBe(7);
    const during = captureHostState();
    const netns = netnsOfUnit(second.ROLLCALL_TESTENV_ROOT, 'kubernetes-netns');
    expect(netns).not.toBe(readlinkSync('/proc/self/ns/net'));
    const down = await cli(['down'], 180_000);
    expect(down.code, down.stderr).toBe(0);
    const after = captureHostState();
    expect(diffHostState(before, during)).toEqual([]);
    expect(diffHostState(before, after)).toEqual([]);
    expect(processesIn(second.ROLLCALL_TESTENV_ROOT)).toEqual([]);
    expect(processesInNetns(netns)).toEqual([]);
    expect(cgroupsNamed(env.kubernetes.realNode.cgroupRoot)).toEqual([]);
  }, 600_000);
});

function netnsOfUnit(root: string, unit: string): string {
  const { pid } = JSON.parse(readFileSync(join(root, 'run', `${unit}.pid`), 'utf8')) as { pid: number };
  return readlinkSync(`/proc/${pid}/ns/net`);
}

function processesIn(root: string): string[] {
  return processesUsingRoot(SERVER_EXECUTABLES, root).map((p) => p.commandLine);
}

function processesInNetns(netns: string): number[] {
  return readdirSync('/proc').flatMap((entry) => {
    try {
      return /^\d+$/.test(entry) && readlinkSync(`/proc/${entry}/ns/net`) === netns ? [Number(entry)] : [];
    } catch {
      return [];
    }
  });
}

function cgroupsNamed(cgroupRoot: string): string[] {
  return readdirSync('/sys/fs/cgroup').map((h) => join('/sys/fs/cgroup', h, cgroupRoot)).filter((dir) => existsSync(dir));
}
