/**
 * Failover and removal on the real node, measured, not asserted: three masters of the
 * quick start's process (examples/worker.mjs) as a Deployment, an observer off the
 * cluster, and a leader ended `--runs` times each way — its container SIGKILLed inside
 * (a crash: the lease runs out) and its pod deleted (SIGTERM: the process withdraws and
 * hands over). Prints Markdown: a line with date, machine and load, then a table.
 * With `--liveness pod` the masters run with registry.member.liveness=pod behind their
 * role's headless Service (the quick start), and the observer reads its EndpointSlices.
 *   npm run bench:node -- [--runs 20] [--liveness heartbeat|pod]
 * Runs on the instance with a real node that the real-node suites share (brought up if needed).
 */
import { parseArgs } from 'node:util';
import { AppsV1Api } from '@kubernetes/client-node';
import { createRegistry, type Member } from '@rollcall/core';
import { waitFor } from '@rollcall/conformance';
import { KubeAdmin, load, machine, REAL_NODE_INSTANCE, requireTestEnv, serverWait, signalContainer, summarize, up } from '@rollcall/tools/testenv';
import { registryPlugin } from '../src/index.js';
import { workerDeployment } from '../test/real-node/worker-deployment.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '20' }, liveness: { type: 'string', default: 'heartbeat' } } });
const runs = Number(values.runs);
const liveness = values.liveness as 'heartbeat' | 'pod';
if (liveness !== 'heartbeat' && liveness !== 'pod') throw new Error(`--liveness ${liveness}: expected heartbeat or pod`);
const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

process.env.ROLLCALL_TESTENV_ROOT ??= REAL_NODE_INSTANCE.root;
process.env.ROLLCALL_TESTENV_PORT_BASE ??= String(REAL_NODE_INSTANCE.portBase);
process.env.ROLLCALL_TESTENV_REAL_NODE = '1';
const loadBefore = load();
await up(['kubernetes']);
const admin = new KubeAdmin();
const namespace = await admin.namespace('node-bench', { forPods: true });
await admin.applyManifest('rollcall-coordinator.yaml', namespace);
if (liveness === 'pod') {
  await admin.applyManifest('rollcall-pod-liveness.yaml', namespace);
  await admin.core.createNamespacedService({ namespace, body: { metadata: { name: 'rollcall-master' }, spec: { clusterIP: 'None', selector: { app: 'masters' }, ports: [{ name: 'probe', port: 8080 }] } } });
}
const cluster = 'bench';
const observer = await createRegistry(
  { type: 'kubernetes', cluster, identity: 'observer', member: { liveness }, kubernetes: { kubeconfig: requireTestEnv('kubernetes').kubeconfig, namespace } },
  { plugins: [registryPlugin as never] },
);
const masters = new Map<string, Member>();
const removed: { at: number; id: string; reason: string }[] = [];
observer.watchMembers('master', (event) => {
  if (event.type === 'added') masters.set(event.member.id, event.member);
  if (event.type === 'removed') {
    masters.delete(event.member.id);
    removed.push({ at: performance.now(), id: event.member.id, reason: event.reason });
  }
});
const leaders: { at: number; identity: string | undefined; token: number | undefined }[] = [];
observer.observe('scheduler').on('changed', ({ leader }) => leaders.push({ at: performance.now(), identity: leader?.identity, token: leader?.fencingToken }));
await admin.kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
  namespace,
  body: workerDeployment({ name: 'masters', role: 'master', serviceAccount: 'rollcall-coordinator', replicas: 3, cluster, env: liveness === 'pod' ? [{ name: 'REGISTRY_MEMBER_LIVENESS', value: 'pod' }] : [] }),
});

const steady = () => waitFor(() => masters.size === 3 && leaders.at(-1)?.identity !== undefined && masters.has(leaders.at(-1)!.identity!), 120_000, serverWait({ what: 'three masters and a leader' }));
const samples = { kill: { failover: [] as number[], removal: [] as number[] }, delete: { failover: [] as number[], removal: [] as number[] } };
const reasons = { kill: new Set<string>(), delete: new Set<string>() };

for (let run = 0; run < runs; run += 1) {
  for (const way of ['kill', 'delete'] as const) {
    await steady();
    const before = leaders.at(-1)!;
    const victim = masters.get(before.identity!)!;
    const pod = await admin.core.readNamespacedPod({ name: (victim.payload as { pod: string }).pod, namespace });
    const at = performance.now();
    if (way === 'kill') signalContainer(pod, 'main', 'SIGKILL');
    else await admin.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace });
    await waitFor(() => leaders.some((l) => l.at > at && l.identity !== undefined && l.identity !== before.identity) && removed.some((r) => r.at > at && r.id === victim.id), 90_000, serverWait({ what: `run ${run + 1} (${way}): a new leader and ${victim.id} removed` }));
    samples[way].failover.push(leaders.find((l) => l.at > at && l.identity !== undefined && l.identity !== before.identity)!.at - at);
    const removal = removed.find((r) => r.at > at && r.id === victim.id)!;
    samples[way].removal.push(removal.at - at);
    reasons[way].add(removal.reason);
    // a container killed again and again is restarted after a growing back-off (CrashLoopBackOff,
    // up to 5 min): measured, the killed pod is replaced by a fresh one instead
    if (way === 'kill') await admin.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace });
    log(`run ${run + 1}/${runs} ${way}: failover ${samples[way].failover.at(-1)!.toFixed(0)} ms, removal ${samples[way].removal.at(-1)!.toFixed(0)} ms (${removal.reason})`);
  }
}

await observer.close();
await admin.core.deleteNamespace({ name: namespace }).catch(() => undefined);
const ms = (n: number) => `${(n / 1000).toFixed(2)} s`;
const row = (what: string, s: number[], reason?: string) => {
  const { n, p50, p99, max } = summarize(s);
  return `| ${what} | ${n} | ${ms(p50)} | ${ms(p99)} | ${ms(max)} |${reason ? ` ${reason} |` : ' |'}`;
};
console.log(`${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${machine()}, load before ${loadBefore}; registry.member.liveness=${liveness}; default timings (leader lease 15 s, member lease 20 s)\n`);
console.log('| the leader … | runs | p50 | p99 | max | removed as |');
console.log('| --- | ---: | ---: | ---: | ---: | --- |');
console.log(row('container SIGKILLed → new leader seen', samples.kill.failover));
console.log(row('container SIGKILLed → its member removed', samples.kill.removal, [...reasons.kill].join(', ')));
console.log(row('pod deleted (SIGTERM) → new leader seen', samples.delete.failover));
console.log(row('pod deleted (SIGTERM) → its member removed', samples.delete.removal, [...reasons.delete].join(', ')));
process.exit(0);
