/**
 * The pod runner's benchmark: N tasks through one runner, on kwok and on the
 * real node side by side, printed as Markdown (a line with date, machine and
 * load, a table with one row per node, the request split per node).
 *   npm run bench:pods -- [--tasks 500] [--capacity 50] [--run-ms 1000] [--on kwok,real] [--real-tasks 500]
 *   npm run bench:pods -- --queued 10000   (the per-task record store alone: queued-records.ts)
 *   npm run bench:pods -- --restore 10000  (a PodRunner's submits, SIGKILL, restore: restore-queued.ts)
 * kwok runs on the test environment that ROLLCALL_TESTENV_ROOT / _PORT_BASE
 * name; the real node on the instance the real-node suites share
 * (REAL_NODE_INSTANCE: ROLLCALL_TESTENV_NODE_ROOT / _NODE_PORT_BASE), each
 * brought up if needed, one after the other. On kwok a task's container
 * "runs" for --run-ms by annotation; on the real node it is a Node.js process
 * that sleeps that long. "Seen running" counts the tasks the runner reported
 * `running`: a short task's pod may go from pending to terminated between two of
 * the kubelet's status updates, and the "→ running" columns are over those seen.
 * Requests are the runner's service account's, from the audit log, by verb;
 * etcd WAL bytes are the `etcd_disk_wal_write_bytes_total` delta from the first
 * submit to the last pod deleted, less the control plane's idle rate measured
 * for 5 s before the runner starts (etcd-wal.ts). A finished task's record is
 * deleted `records.retainDoneMs` after its end, after the run: not counted.
 * Not a test: nothing here passes or fails on a time.
 */
import { execSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { AuditLog, KubeAdmin, KWOK_POD_ANNOTATIONS, machine, onRealNode, REAL_NODE_INSTANCE, requireTestEnv, serviceAccountKubeconfig, summarize, up } from '@rollcall/tools/testenv';
import { waitFor } from '@rollcall/conformance';
import { hasCode } from '@rollcall/core';
import { createPodRunner, TERMINAL_PHASES, type PodTemplateSpec, type Task, type TaskStatus } from '../src/index.js';
import { idleWalRate, walWindow } from './etcd-wal.js';
import { benchQueued } from './queued-records.js';
import { benchRestore } from './restore-queued.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '500' },
    capacity: { type: 'string', default: '50' },
    'run-ms': { type: 'string', default: '1000' },
    on: { type: 'string', default: 'kwok,real' },
    'real-tasks': { type: 'string' },
    queued: { type: 'string' },
    restore: { type: 'string' },
  },
});
if (values.queued !== undefined) {
  await benchQueued(Number(values.queued));
  process.exit(0);
}
if (values.restore !== undefined) {
  await benchRestore(Number(values.restore));
  process.exit(0);
}
const capacity = Number(values.capacity);
const runMs = Number(values['run-ms']);
const targets = values.on.split(',').map((s) => s.trim());
for (const target of targets) if (target !== 'kwok' && target !== 'real') throw new Error(`--on ${values.on}: expected kwok, real or both`);
const taskCount = (target: string) => Number(target === 'real' ? (values['real-tasks'] ?? values.tasks) : values.tasks);

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const ms = (n: number) => `${Math.round(n)} ms`;

/** One node kind's measurements, as one table row and its request split. */
interface Row {
  cells: string[];
  requests: string;
}

/** Points the test-environment helpers at the instance of `target`: the kwok one given, or the one with the real node. */
function useInstance(target: string, kwok: { root?: string; portBase?: string; realNode?: string }): void {
  const set = (name: string, value: string | undefined) => (value === undefined ? delete process.env[name] : (process.env[name] = value));
  if (target === 'kwok') {
    set('ROLLCALL_TESTENV_ROOT', kwok.root);
    set('ROLLCALL_TESTENV_PORT_BASE', kwok.portBase);
    set('ROLLCALL_TESTENV_REAL_NODE', kwok.realNode);
  } else {
    set('ROLLCALL_TESTENV_ROOT', REAL_NODE_INSTANCE.root);
    set('ROLLCALL_TESTENV_PORT_BASE', String(REAL_NODE_INSTANCE.portBase));
    set('ROLLCALL_TESTENV_REAL_NODE', '1');
  }
}

async function measure(target: string, tasks: number): Promise<Row> {
  await up(['kubernetes']);
  const admin = new KubeAdmin();
  const namespace = await admin.namespace('pod-bench', { forPods: true });
  await admin.applyManifest('rollcall-pod-runner.yaml', namespace);
  const kubeconfig = await serviceAccountKubeconfig(namespace, 'rollcall-pod-runner');
  const idleRate = await idleWalRate();
  const user = `system:serviceaccount:${namespace}:rollcall-pod-runner`;
  const audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => {
    await admin.core.readNamespacedPod({ namespace, name }).catch(() => undefined);
  });
  const template: PodTemplateSpec =
    target === 'real' ? { spec: onRealNode({ containers: [{ name: 'main' }] }) as PodTemplateSpec['spec'] } : { spec: { containers: [{ name: 'main', image: 'bench:1' }] } };
  const task = (taskId: string): Task =>
    target === 'real'
      ? { taskId, taskType: 'bench', command: ['node', '-e', `setTimeout(() => {}, ${runMs})`] }
      : { taskId, taskType: 'bench', annotations: { [KWOK_POD_ANNOTATIONS.exitCode]: '0', [KWOK_POD_ANNOTATIONS.runFor]: `${runMs}ms` } };

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
    templates: [{ name: 'bench', template }],
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
  const wal = await walWindow(idleRate);
  const cpuStart = process.cpuUsage();
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const progress = setInterval(() => log(`${target}: ${reported.size}/${tasks} reported, ${running.size} started`), 10_000);
  const started = performance.now();
  const wallStart = Date.now();
  const loadBefore = loadavg()[0]!.toFixed(1);
  log(`${target}: ${tasks} tasks, capacity ${capacity}, each running ${runMs} ms, in ${namespace}`);
  // all at once, as the first generation's runs did; a submit the API server refused (429: its flow control's
  // queue for the runner's requests was full) is the caller's to send again, after a pause
  let resubmits = 0;
  const submit = async (t: Task): Promise<void> => {
    for (let tries = 1; ; tries += 1) {
      try {
        await runner.submit(t);
        return;
      } catch (err) {
        if (!hasCode(err, 'UNAVAILABLE') || tries === 10) throw err;
        resubmits += 1;
        await new Promise((r) => setTimeout(r, 200 * tries));
      }
    }
  };
  const submits: Promise<void>[] = [];
  for (let i = 0; i < tasks; i += 1) {
    const taskId = `bench-${i}`;
    submitted.set(taskId, performance.now());
    submits.push(submit(task(taskId)));
  }
  await Promise.all([allDone, ...submits]);
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuStart);
  clearInterval(sampler);
  clearInterval(progress);
  const loadAfter = loadavg()[0]!.toFixed(1);
  // every pod deleted before the window closes, so the requests counted are the whole life of every task
  for (;;) {
    const left = (await admin.core.listNamespacedPod({ namespace })).items.length;
    if (left === 0) break;
    log(`${target}: ${left} pods still being deleted`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const walDelta = await wal.close();
  const requests = (await audit.requests(window)).filter((e) => e.user?.username === user);
  await runner.close();
  await admin.core.deleteNamespace({ name: namespace });
  // its records' deletes are etcd writes: gone before the next run measures the idle rate
  await waitFor(async () => (await admin.core.readNamespace({ name: namespace }).then(() => false, () => true)) || undefined, 300_000, `namespace ${namespace} to be deleted`);

  const toRunning = summarize([...running].map(([id, at]) => at - submitted.get(id)!));
  const createdToRunning = summarize([...running].map(([id, at]) => at - created.get(id)!));
  const toReported = summarize([...reported].map(([id, r]) => r.at - submitted.get(id)!));
  // the container's finishedAt has whole seconds: this column is ±1 s
  const finishedToReported = summarize([...reported].filter(([, r]) => r.status.finishedAt).map(([, r]) => wallStart + (r.at - started) - Date.parse(r.status.finishedAt!)));
  const phases = [...reported.values()].reduce<Record<string, number>>((acc, r) => ((acc[r.status.phase] = (acc[r.status.phase] ?? 0) + 1), acc), {});
  const byVerb = requests.reduce<Record<string, number>>((acc, e) => {
    const key = `${e.verb} ${e.objectRef?.resource ?? ''}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
    acc[key] = (acc[key] ?? 0) + 1;
    // a refusal (409, 403, 429) counted apart, within its verb's count
    const code = e.responseStatus?.code ?? 0;
    if (code >= 400) acc[`${key} answered ${code}`] = (acc[`${key} answered ${code}`] ?? 0) + 1;
    return acc;
  }, {});
  return {
    cells: [
      target === 'real' ? 'real (kubelet, containerd)' : 'kwok',
      `${tasks} (${Object.entries(phases).map(([p, n]) => `${n} ${p}`).join(', ')}; ${running.size} seen running)`,
      String(capacity),
      `${(elapsedMs / 1000).toFixed(1)} s`,
      `${ms(toRunning.p50)} / ${ms(toRunning.p99)}`,
      `${ms(createdToRunning.p50)} / ${ms(createdToRunning.p99)}`,
      `${ms(toReported.p50)} / ${ms(toReported.p99)}`,
      `${ms(finishedToReported.p50)} / ${ms(finishedToReported.p99)}`,
      (requests.length / tasks).toFixed(2),
      `${Math.round(walDelta / tasks)} (idle ${Math.round(idleRate * 1000)} B/s subtracted)`,
      `${((cpu.user + cpu.system) / 1000 / 1000).toFixed(1)} s (${(((cpu.user + cpu.system) / 1000 / elapsedMs) * 100).toFixed(0)} % of a core)`,
      `${Math.round(peakRss / 2 ** 20)} MiB`,
      `${loadBefore} → ${loadAfter}`,
    ],
    requests: `${target}${resubmits ? ` (${resubmits} submits answered UNAVAILABLE and sent again)` : ''}: ${Object.entries(byVerb).sort().map(([k, n]) => `${k} ${n}`).join(', ')}`,
  };
}

const kwokInstance = { root: process.env.ROLLCALL_TESTENV_ROOT, portBase: process.env.ROLLCALL_TESTENV_PORT_BASE, realNode: process.env.ROLLCALL_TESTENV_REAL_NODE };
const rows: Row[] = [];
for (const target of targets) {
  useInstance(target, kwokInstance);
  rows.push(await measure(target, taskCount(target)));
}

const commit = execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
console.log(`${new Date().toISOString()}, commit ${commit}, ${machine()}`);
console.log();
console.log('| node | tasks | capacity | wall time | submit → running p50 / p99 (queue included) | pod created → running p50 / p99 | submit → reported p50 / p99 | finished → reported p50 / p99 (±1 s) | API requests per task | etcd WAL bytes per task | runner CPU | bench process peak RSS | load average (1 min) before → after |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const row of rows) console.log(`| ${row.cells.join(' | ')} |`);
console.log();
console.log(`Requests by the runner's service account, from the audit log: ${rows.map((r) => r.requests).join('; ')}.`);
process.exit(0);
