import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, KubernetesObjectApi, loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';
import { createRegistry, type Registry } from '@rollcall/core';
import { KubeAdmin, readTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { waitFor } from '@rollcall/conformance';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrapeUntil, sampleValue } from '@rollcall/tools/test-kit';
import { Running, run } from './cli.js';

// The real API server of tools/ (RBAC on), started by the global setup.
const kube = readTestEnv().kubernetes!;
const kc = new KubeConfig();
kc.loadFromFile(kube.kubeconfig);
let namespace: string;
let memberKubeconfig: string;
let registry: Registry;

/** Applies what `rollcall manifests --role <role> --namespace <ns>` prints, as `| kubectl apply -f -` would. */
async function applyManifest(role: string, ns: string): Promise<void> {
  const printed = await run(['manifests', '--role', role, '--namespace', ns]);
  expect(printed.code, printed.stderr).toBe(0);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  for (const doc of loadAllYaml(printed.stdout) as KubernetesObject[]) await objects.create(doc);
}

beforeAll(async () => {
  namespace = await new KubeAdmin().namespace('cli', { forPods: true });
  await applyManifest('member', namespace);
  memberKubeconfig = await serviceAccountKubeconfig(namespace, 'rollcall-member');
  registry = await createRegistry({ type: 'kubernetes', cluster: 'cli', identity: 'worker-k', kubernetes: { kubeconfig: kube.kubeconfig, namespace } });
  await registry.announce({ role: 'worker', payload: { status: 'NORMAL' } });
});

afterAll(async () => {
  await registry?.close();
  if (namespace) await kc.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace }).catch(() => {});
});

describe('without a kubeconfig', () => {
  it('a command fails with INVALID_CONFIG naming registry.kubernetes.kubeconfig and what was tried (exit 3)', async () => {
    const home = mkdtempSync(join(tmpdir(), 'rollcall-home-'));
    try {
      const r = await run(['members', '-t', 'kubernetes'], { env: { HOME: home, KUBECONFIG: '', KUBERNETES_SERVICE_HOST: '' } });
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toMatch(/^rollcall: error INVALID_CONFIG \[kubernetes\]: registry\.kubernetes\.kubeconfig: no kubeconfig found; tried KUBECONFIG \(not set\), .*\.kube\/config \(no such file\), the in-cluster service account/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});

describe('on the real Kubernetes API server', () => {
  it('members lists the member Leases, through the flat -o form', async () => {
    const r = await run(['members', '-t', 'kubernetes', '-c', 'cli', '-o', `kubernetes.kubeconfig=${kube.kubeconfig}`, '-o', `kubernetes.namespace=${namespace}`, '--json']);
    expect(r.code, r.stderr).toBe(0);
    // Its incarnation is the Lease's uid, whole in JSON.
    expect(JSON.parse(r.stdout)).toEqual([expect.objectContaining({ role: 'worker', id: 'worker-k', incarnation: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/), payload: { status: 'NORMAL' } })]);
    const table = await run(['members', '-t', 'kubernetes', '-c', 'cli', '-o', `kubernetes.kubeconfig=${kube.kubeconfig}`, '-o', `kubernetes.namespace=${namespace}`]);
    expect(table.stdout.trim().split('\n')[1]!.split(/\s+/)[2]).toBe((JSON.parse(r.stdout) as { incarnation: string }[])[0]!.incarnation.slice(0, 8));
  });

  it('a pod member whose pod is Ready is never STALE, however old its record (never renewed): members (table, JSON, --check) and watch', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    // The shipped shape: a headless Service per role, selecting the role's pods; kwok makes the pod Ready once Running.
    await core.createNamespacedService({ namespace, body: { metadata: { name: 'rollcall-podworker' }, spec: { clusterIP: 'None', selector: { app: 'podworker' }, ports: [{ name: 'probe', port: 8080 }] } } });
    const created = await core.createNamespacedPod({ namespace, body: { metadata: { name: 'podworker-1', labels: { app: 'podworker' } }, spec: { containers: [{ name: 'main', image: 'registry.invalid/worker:1' }] } } });
    const inPod = await createRegistry({ type: 'kubernetes', cluster: 'cli', identity: 'podworker-1', member: { liveness: 'pod', heartbeatIntervalMs: 500, leaseDurationMs: 2000 }, kubernetes: { kubeconfig: kube.kubeconfig, namespace, podUid: created.metadata!.uid! } });
    try {
      await inPod.announce({ role: 'podworker', id: 'p1', payload: { slot: 1 } });
      const where = ['-t', 'kubernetes', '-c', 'cli', '-o', `kubernetes.kubeconfig=${kube.kubeconfig}`, '-o', `kubernetes.namespace=${namespace}`];
      type Row = { id: string; stale: boolean; judgedBy?: string; heartbeatAgeMs: number; leaseDurationMs: number };
      // Its record is written once: wait until it is older than its lease, when a mark by renewTime alone would say STALE.
      let row: Row | undefined;
      await waitFor(async () => {
        const r = await run(['members', 'podworker', ...where, '--json']);
        row = (JSON.parse(r.stdout) as Row[])[0];
        return row !== undefined && row.heartbeatAgeMs > row.leaseDurationMs + 500;
      }, 30_000, 'the pod member\'s record to be older than its lease');
      expect(row).toMatchObject({ id: 'p1', stale: false, judgedBy: 'pod', leaseDurationMs: 2000 });
      const table = await run(['members', 'podworker', ...where, '--check']);
      expect(table.code, table.stdout + table.stderr).toBe(0);
      expect(table.stdout).toMatch(/^podworker +p1 +[0-9a-f]{8} +\d+\.\ds \(pod Ready\) /m);
      expect(table.stdout + table.stderr).not.toContain('STALE');
      const w = Running.start(['watch', ...where, '--json']);
      try {
        await w.until('the watch to start', (out, err) => out.includes('"id":"p1"') && err.includes('watching cluster cli'));
        const added = w.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.id === 'p1');
        expect(added).toMatchObject({ kind: 'member', type: 'added', role: 'podworker' });
        expect(added).not.toHaveProperty('stale');
      } finally {
        w.child.kill('SIGINT');
      }
      expect((await w.exited).code).toBe(130);
    } finally {
      await inPod.close();
      await core.deleteNamespacedPod({ name: 'podworker-1', namespace, gracePeriodSeconds: 0 });
      await core.deleteNamespacedService({ name: 'rollcall-podworker', namespace });
    }
  });

  it('doctor: the member Role lacks what a coordinator needs, and says which manifest grants it (exit 8)', async () => {
    const env = { REGISTRY_TYPE: 'kubernetes', REGISTRY_CLUSTER: 'cli', REGISTRY_KUBERNETES_KUBECONFIG: memberKubeconfig, REGISTRY_KUBERNETES_NAMESPACE: namespace };
    const coordinator = await run(['doctor', '--json'], { env });
    expect(coordinator.code, coordinator.stdout + coordinator.stderr).toBe(8);
    const report = JSON.parse(coordinator.stdout) as { checks: { name: string; status: string; missing?: string[]; fix?: string }[] };
    expect(report.checks.find((c) => c.name === 'connection')).toMatchObject({ status: 'ok' });
    expect(report.checks.find((c) => c.name === 'permissions')).toMatchObject({ status: 'fail', missing: ['update leases.coordination.k8s.io'], fix: `rollcall manifests --role coordinator --namespace ${namespace} | kubectl apply -f -` });

    const member = await run(['doctor', '--role', 'member'], { env });
    expect(member.code, member.stdout + member.stderr).toBe(0);
    expect(member.stdout).toMatch(new RegExp(`^OK +permissions +role member: all 6 permissions granted in namespace ${namespace}`, 'm'));
    // The service account's token is in the kubeconfig; it must not be printed.
    const token = (JSON.parse(readFileSync(memberKubeconfig, 'utf8')) as { users: { user: { token: string } }[] }).users[0]!.user.token;
    for (const out of [coordinator.stdout, coordinator.stderr, member.stdout, member.stderr]) expect(out).not.toContain(token);
  });

  it('doctor with registry.member.liveness=pod: the member Role alone lacks get/list/watch endpointslices, and --liveness pod grants it', async () => {
    const env = { REGISTRY_TYPE: 'kubernetes', REGISTRY_CLUSTER: 'cli', REGISTRY_MEMBER_LIVENESS: 'pod', REGISTRY_KUBERNETES_KUBECONFIG: memberKubeconfig, REGISTRY_KUBERNETES_NAMESPACE: namespace };
    const refused = await run(['doctor', '--role', 'member', '--json'], { env });
    expect(refused.code, refused.stdout + refused.stderr).toBe(8);
    const report = JSON.parse(refused.stdout) as { checks: { name: string; missing?: string[]; fix?: string }[] };
    expect(report.checks.find((c) => c.name === 'permissions')).toMatchObject({
      missing: ['get endpointslices.discovery.k8s.io', 'list endpointslices.discovery.k8s.io', 'watch endpointslices.discovery.k8s.io'],
      fix: `rollcall manifests --role member --namespace ${namespace} --liveness pod | kubectl apply -f -`,
    });
    const printed = await run(['manifests', '--role', 'member', '--namespace', namespace, '--liveness', 'pod']);
    const objects = KubernetesObjectApi.makeApiClient(kc);
    // The member's own documents exist already (beforeAll): only what --liveness pod adds.
    for (const doc of loadAllYaml(printed.stdout) as KubernetesObject[]) if (doc.metadata?.name?.includes('pod-liveness')) await objects.create(doc);
    const ok = await run(['doctor', '--role', 'member'], { env });
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(new RegExp(`^OK +permissions +role member: all 9 permissions granted in namespace ${namespace} \\(leases.coordination.k8s.io, endpointslices.discovery.k8s.io\\)`, 'm'));
  });

  it('doctor --role pod-runner: the pod runner\'s Role is enough, the member Role lacks every pod permission', async () => {
    await applyManifest('pod-runner', namespace);
    const podRunner = await serviceAccountKubeconfig(namespace, 'rollcall-pod-runner');
    const ok = await run(['doctor', '--role', 'pod-runner', '-t', 'kubernetes', '-o', `kubernetes.kubeconfig=${podRunner}`, '-o', `kubernetes.namespace=${namespace}`]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(new RegExp(`^OK +permissions +role pod-runner: all 20 permissions granted in namespace ${namespace} \\(pods, pods/log, events, configmaps, podtemplates, leases.coordination.k8s.io\\)`, 'm'));
    const refused = await run(['doctor', '--role', 'pod-runner', '--json', '-t', 'kubernetes', '-o', `kubernetes.kubeconfig=${memberKubeconfig}`, '-o', `kubernetes.namespace=${namespace}`]);
    expect(refused.code, refused.stdout + refused.stderr).toBe(8);
    const report = JSON.parse(refused.stdout) as { checks: { name: string; missing?: string[]; fix?: string }[] };
    expect(report.checks.find((c) => c.name === 'permissions')).toMatchObject({ missing: expect.arrayContaining(['create pods', 'get pods/log', 'list events']), fix: `rollcall manifests --role pod-runner --namespace ${namespace} | kubectl apply -f -` });
  });

  it('demo --pods --metrics-port 0: a runner pair, the leader SIGKILLed mid-run, the other re-attaches and reports every task once; each runner serves its metrics, the survivor\'s showing it leads, counts what it finished and the pods it let go', async () => {
    const demo = Running.start(['demo', '--pods', '--metrics-port', '0', '-o', `kubernetes.kubeconfig=${kube.kubeconfig}`, '-o', `kubernetes.namespace=${namespace}`]);
    const ports = await demo.until('both runners to serve their metrics', (out) => {
      const found = Object.fromEntries([...out.matchAll(/(runner-[ab]) serves its metrics \(the runner's and its registry's\) at http:\/\/localhost:(\d+)\/metrics/g)].map((m) => [m[1]!, Number(m[2])]));
      return Object.keys(found).length === 2 ? found : undefined;
    }, 60_000);
    const killed = await demo.until('the leader to be SIGKILLed', (out) => /SIGKILL (runner-[ab]), the leader/.exec(out)?.[1], 90_000);
    const survivor = killed === 'runner-a' ? 'runner-b' : 'runner-a';
    const samples = await scrapeUntil(`http://127.0.0.1:${ports[survivor]}/metrics`, `${survivor} to lead and report a task`, (s) => sampleValue(s, 'rollcall_pod_runner_leader') === 1 && s.some((x) => x.name === 'rollcall_pod_runner_tasks_finished_total' && x.labels.phase === 'succeeded' && x.value > 0) && (sampleValue(s, 'rollcall_pod_runner_requests_total', { verb: 'patch', resource: 'pods', code: 'OK' }) ?? 0) > 0, 60_000);
    expect(samples.find((x) => x.name === 'rollcall_pod_runner_info')?.labels.runner).toMatch(/^demo-[0-9a-f]{4}$/);
    expect(samples.some((x) => x.name === 'rollcall_election_leader' && x.value === 1)).toBe(true);
    const { code } = await demo.exited;
    expect(code, demo.stdout + demo.stderr).toBe(0);
    expect(demo.stdout).toMatch(/every task succeeded and was reported exactly once, across the leader's SIGKILL \(runner-([ab]) → runner-(?!\1)[ab], fencing token 1 → 2\)/);
    expect(demo.stdout).toMatch(/^etl-0 +etl +succeeded +runner-[ab] +\{"rows":100\}$/m);
  }, 160_000);

  it('doctor: an identity bound to nothing cannot list, and every permission is reported missing', async () => {
    const nobody = await serviceAccountKubeconfig(namespace, 'nobody');
    const r = await run(['doctor', '--role', 'member', '-t', 'kubernetes', '-o', `kubernetes.kubeconfig=${nobody}`, '-o', `kubernetes.namespace=${namespace}`]);
    expect(r.code, r.stdout + r.stderr).toBe(8);
    expect(r.stdout).toMatch(/^FAIL +connection +PERMISSION_DENIED: /m);
    expect(r.stdout).toMatch(new RegExp(`^FAIL +permissions +role member: missing in namespace ${namespace}: get leases.coordination.k8s.io, list leases.coordination.k8s.io, watch leases.coordination.k8s.io, create leases.coordination.k8s.io, patch leases.coordination.k8s.io, delete leases.coordination.k8s.io; granted by the member manifest: rollcall manifests --role member --namespace ${namespace} \\| kubectl apply -f -`, 'm'));
  });
});
