/**
 * The pod runner's benchmark: N tasks through one runner on kwok, printed as
 * Markdown (a line with date, machine and load, a table, the request split).
 *   npm run bench:pods -- [--tasks 500] [--capacity 50] [--run-ms 1000]
 * Runs on the test environment that ROLLCALL_TESTENV_ROOT / _PORT_BASE name
 * (brought up if needed). Not a test: nothing here passes or fails on a time.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { AuditLog, KubeAdmin, KWOK_POD_ANNOTATIONS, machine, requireTestEnv, serviceAccountKubeconfig, summarize, up } from '@rollcall/tools/testenv';
import { createPodRunner, TERMINAL_PHASES, type TaskStatus } from '../src/index.js';

const { values } = parseArgs({ options: { tasks: { type: 'string', default: '500' }, capacity: { type: 'string', default: '50' }, 'run-ms': { type: 'string', default: '1000' } } });
const tasks = Number(values.tasks);
const capacity = Number(values.capacity);
const runMs = Number(values['run-ms']);

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const loadBefore = loadavg()[0]!.toFixed(1);
await up(['kubernetes']);
const admin = new KubeAdmin();
const namespace = await admin.namespace('pod-bench', { forPods: true });
await admin.applyManifest('rollcall-pod-runner.yaml', namespace);
const kubeconfig = await serviceAccountKubeconfig(namespace, 'rollcall-pod-runner');
const user = `system:serviceaccount:${namespace}:rollcall-pod-runner`;
const audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => {
  await admin.core.readNamespacedPod({ namespace, name }).catch(() => undefined);
});

const submitted = new Map<string, number>();
const created = new Map<string, number>();
const running = new Map<string, number>();
const reported = new Map<string, { at: number; status: TaskStatus }>();
let resolveAll: () => void = () => undefined;
const allDone = new Promise<void>((resolve) => (resolveAll = resolve));
const runner = await createPodRunner({
  namespace,
  kubeconfig,
  capacity: { total: capacity },
  templates: [{ name: 'bench', template: { spec: { containers: [{ name: 'main', image: 'bench:1' }] } } }],
  onStatus: (status) => {
    const now = performance.now();
    if (status.phase === 'pending' && !created.has(status.taskId)) created.set(status.taskId, now);
    if (status.phase === 'running' && !running.has(status.taskId)) running.set(status.taskId, now);
    if (TERMINAL_PHASES.has(status.phase) && !reported.has(status.taskId)) {
      reported.set(status.taskId, { at: now, status });
      if (reported.size === tasks) resolveAll();
    }
  },
});

const window = audit.open();
const cpuStart = process.cpuUsage();
let peakRss = process.memoryUsage().rss;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
const started = performance.now();
const wallStart = Date.now();
log(`${tasks} tasks, capacity ${capacity}, each running ${runMs} ms, in ${namespace}`);
for (let i = 0; i < tasks; i += 1) {
  const taskId = `bench-${i}`;
  submitted.set(taskId, performance.now());
  void runner.submit({ taskId, taskType: 'bench', annotations: { [KWOK_POD_ANNOTATIONS.exitCode]: '0', [KWOK_POD_ANNOTATIONS.runFor]: `${runMs}ms` } });
}
await allDone;
const elapsedMs = performance.now() - started;
const cpu = process.cpuUsage(cpuStart);
clearInterval(sampler);
// every pod deleted before the window closes, so the requests counted are the whole life of every task
for (;;) {
  const left = (await admin.core.listNamespacedPod({ namespace })).items.length;
  if (left === 0) break;
  log(`${left} pods still being deleted`);
  await new Promise((r) => setTimeout(r, 500));
}
const requests = (await audit.requests(window)).filter((e) => e.user?.username === user);
await runner.close();
await admin.core.deleteNamespace({ name: namespace });

const toRunning = summarize([...running].map(([id, at]) => at - submitted.get(id)!));
const createdToRunning = summarize([...running].map(([id, at]) => at - created.get(id)!));
const toReported = summarize([...reported].map(([id, r]) => r.at - submitted.get(id)!));
// the container's finishedAt has whole seconds: this column is ±1 s
const finishedToReported = summarize([...reported].map(([, r]) => wallStart + (r.at - started) - Date.parse(r.status.finishedAt!)));
const phases = [...reported.values()].reduce<Record<string, number>>((acc, r) => ((acc[r.status.phase] = (acc[r.status.phase] ?? 0) + 1), acc), {});
const byVerb = requests.reduce<Record<string, number>>((acc, e) => {
  const key = `${e.verb} ${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
  acc[key] = (acc[key] ?? 0) + 1;
  return acc;
}, {});
const ms = (n: number) => `${Math.round(n)} ms`;

console.log(`${new Date().toISOString().slice(0, 10)}, ${machine()}; load average ${loadBefore} → ${loadavg()[0]!.toFixed(1)}`);
console.log();
console.log('| tasks | capacity | wall time | submit → running p50 / p99 (queue included) | pod created → running p50 / p99 | submit → reported p50 / p99 | finished → reported p50 / p99 (±1 s) | API requests per task | runner CPU | runner peak RSS |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
console.log(
  `| ${tasks} (${Object.entries(phases).map(([p, n]) => `${n} ${p}`).join(', ')}) | ${capacity} | ${(elapsedMs / 1000).toFixed(1)} s | ${ms(toRunning.p50)} / ${ms(toRunning.p99)} | ${ms(createdToRunning.p50)} / ${ms(createdToRunning.p99)} | ${ms(toReported.p50)} / ${ms(toReported.p99)} | ${ms(finishedToReported.p50)} / ${ms(finishedToReported.p99)} | ${(requests.length / tasks).toFixed(2)} | ${((cpu.user + cpu.system) / 1000 / 1000).toFixed(1)} s (${(((cpu.user + cpu.system) / 1000 / elapsedMs) * 100).toFixed(0)} % of a core) | ${Math.round(peakRss / 2 ** 20)} MiB |`,
);
console.log();
console.log(`Requests by the runner's service account, from the audit log: ${Object.entries(byVerb).sort().map(([k, n]) => `${k} ${n}`).join(', ')}.`);
process.exit(0);
