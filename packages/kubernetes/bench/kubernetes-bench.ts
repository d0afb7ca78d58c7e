/**
 * Benchmark of the Kubernetes backend against the real test API server and its
 * audit log. Prints:
 *  - requests per minute per idle member, follower candidate and leader, each a
 *    separate service account so the audit log tells them apart (default timings);
 *  - graceful handover (resign → next leader's elected) and crash failover
 *    (leader cut off → next leader's elected), p50 and p99 over ROUNDS rounds;
 *  - announce → a peer's added event, p50 and p99.
 * Run: npm run testenv -- up kubernetes && npm run bench -w @rollcall/kubernetes
 */
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createRegistry, type Registry } from '@rollcall/core';
import { readTestEnv, serviceAccountKubeconfig } from '@rollcall/tools/testenv';
import { registryPlugin } from '../src/index.js';
import { Admin } from '../test/admin.js';
import { proxiedKubeconfig } from '../test/kube-env.js';

const ROUNDS = Number(process.env.ROUNDS ?? 50);
const IDLE_MS = Number(process.env.IDLE_MS ?? 120_000);
const plugins = [registryPlugin as never];
const kube = readTestEnv().kubernetes!;
const admin = new Admin();

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function summary(name: string, values: number[]): void {
  console.log(`${name.padEnd(34)} p50 ${percentile(values, 50).toFixed(1).padStart(8)} ms   p99 ${percentile(values, 99).toFixed(1).padStart(8)} ms   (n=${values.length})`);
}

function until(predicate: () => boolean, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = performance.now() + timeoutMs;
    const poll = setInterval(() => {
      if (predicate()) {
        clearInterval(poll);
        resolve();
      } else if (performance.now() > deadline) {
        clearInterval(poll);
        reject(new Error(`timed out after ${timeoutMs} ms`));
      }
    }, 1);
  });
}

/** Audit events (one per request: its ResponseComplete, or ResponseStarted for a watch still open) per user after `fromByte`. */
async function requestsByUser(fromByte: number, users: string[]): Promise<Map<string, Map<string, number>>> {
  const counts = new Map(users.map((u) => [u, new Map<string, number>()]));
  const seen = new Set<string>();
  const lines = createInterface({ input: createReadStream(kube.auditLogPath, { start: fromByte }) });
  for await (const line of lines) {
    if (!line.startsWith('{')) continue;
    const e = JSON.parse(line) as { auditID: string; stage: string; verb: string; user: { username: string } };
    const perVerb = counts.get(e.user.username);
    if (!perVerb || seen.has(e.auditID) || (e.stage !== 'ResponseComplete' && e.stage !== 'ResponseStarted')) continue;
    seen.add(e.auditID);
    perVerb.set(e.verb, (perVerb.get(e.verb) ?? 0) + 1);
  }
  return counts;
}

async function idleRequests(namespace: string): Promise<void> {
  const roles = ['bench-member', 'bench-leader', 'bench-follower'];
  await admin.applyManifest('rollcall-coordinator.yaml', namespace);
  for (const sa of roles) {
    await admin.objects.create({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: sa, namespace }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'rollcall-coordinator' }, subjects: [{ kind: 'ServiceAccount', name: sa, namespace }] } as never);
  }
  const configs = await Promise.all(roles.map((sa) => serviceAccountKubeconfig(namespace, sa)));
  const open = (i: number) => createRegistry({ type: 'kubernetes', cluster: 'idle', identity: roles[i]!, kubernetes: { kubeconfig: configs[i]!, namespace } }, { plugins });
  const [member, leader, follower] = await Promise.all([0, 1, 2].map(open));
  await member!.announce({ role: 'worker', payload: { cpu: 0.1, status: 'NORMAL' } });
  const leading = leader!.campaign('scheduler');
  await leading.whenElected();
  follower!.campaign('scheduler');
  // Let start-up requests settle, then count a steady window.
  await new Promise((resolve) => setTimeout(resolve, 5000));
  const from = statSync(kube.auditLogPath).size;
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  await new Promise((resolve) => setTimeout(resolve, 1500)); // the audit log is written asynchronously
  const counts = await requestsByUser(from, roles.map((sa) => `system:serviceaccount:${namespace}:${sa}`));
  const minutes = IDLE_MS / 60_000;
  for (const [user, perVerb] of counts) {
    const total = [...perVerb.values()].reduce((a, b) => a + b, 0);
    const detail = [...perVerb.entries()].map(([verb, n]) => `${verb} ${(n / minutes).toFixed(1)}`).join(', ');
    console.log(`${user.split(':').pop()!.padEnd(16)} ${(total / minutes).toFixed(1).padStart(6)} requests/min   (${detail || 'none'})`);
  }
  await Promise.all([member!, leader!, follower!].map((r) => r.close()));
}

async function handover(namespace: string): Promise<void> {
  const timing = { election: { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } };
  const registries = await Promise.all(['h1', 'h2', 'h3'].map((identity) => createRegistry({ type: 'kubernetes', cluster: 'handover', identity, ...timing, kubernetes: { kubeconfig: kube.kubeconfig, namespace } }, { plugins })));
  const times: number[] = [];
  let current = registries.map((r) => r.campaign('scheduler'));
  await until(() => current.some((l) => l.isLeader), 20_000);
  for (let round = 0; round < ROUNDS; round++) {
    const index = current.findIndex((l) => l.isLeader);
    const started = performance.now();
    await current[index]!.resign();
    await until(() => current.some((l, i) => i !== index && l.isLeader), 20_000);
    times.push(performance.now() - started);
    current = current.map((l, i) => (i === index ? registries[i]!.campaign('scheduler') : l));
  }
  summary('graceful handover (default timing)', times);
  await Promise.all(registries.map((r) => r.close()));
}

async function failover(namespace: string): Promise<void> {
  const timing = { election: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300 } };
  const times: number[] = [];
  const open = async (identity: string) => {
    const { proxy, kubeconfig } = await proxiedKubeconfig();
    const registry = await createRegistry({ type: 'kubernetes', cluster: 'failover', identity, ...timing, requestTimeoutMs: 1000, kubernetes: { kubeconfig, namespace } }, { plugins });
    return { proxy, registry, leadership: registry.campaign('scheduler') };
  };
  let candidates = await Promise.all(['f0', 'f1'].map(open));
  for (let round = 0; round < ROUNDS; round++) {
    await until(() => candidates.some((c) => c.leadership.isLeader), 20_000);
    const leader = candidates.find((c) => c.leadership.isLeader)!;
    const started = performance.now();
    leader.proxy.cut('reset'); // to the others, a crash
    await until(() => candidates.some((c) => c !== leader && c.leadership.isLeader), 20_000);
    times.push(performance.now() - started);
    await leader.registry.close().catch(() => {});
    await leader.proxy.close();
    candidates = [...candidates.filter((c) => c !== leader), await open(`f${round + 2}`)];
  }
  summary(`crash failover (lease ${timing.election.leaseDurationMs} ms)`, times);
  for (const c of candidates) {
    await c.registry.close();
    await c.proxy.close();
  }
}

async function announceDelay(namespace: string): Promise<void> {
  const open = (identity: string) => createRegistry({ type: 'kubernetes', cluster: 'announce', identity, kubernetes: { kubeconfig: kube.kubeconfig, namespace } }, { plugins });
  const [a, b] = await Promise.all([open('a'), open('b')]);
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const id = `w${round}`;
    const seen = new Promise<number>((resolve) => {
      const off = b!.on('memberAdded', (e) => e.member.id === id && (off(), resolve(performance.now())));
    });
    const started = performance.now();
    const handle = await a!.announce({ role: 'worker', id, payload: { round } });
    times.push((await seen) - started);
    await handle.withdraw();
  }
  summary('announce -> peer added', times);
  await Promise.all([a!, b!].map((r: Registry) => r.close()));
}

const namespace = await admin.namespace('bench');
console.log(`# Kubernetes backend benchmark, ${new Date().toISOString()}, API server ${kube.version}, ${ROUNDS} rounds, idle window ${IDLE_MS / 1000} s`);
// ONLY=handover,failover runs a subset.
const only = process.env.ONLY?.split(',');
for (const [name, run] of Object.entries({ idle: idleRequests, handover, failover, announce: announceDelay })) {
  if (!only || only.includes(name)) await run(namespace);
}
await admin.core.deleteNamespace({ name: namespace });
