/**
 * `npm run bench:pods -- --restore N` (issue 35 item 1): N queued tasks
 * accepted by a real PodRunner in a child process (restore-child.mjs), the
 * child SIGKILLed, a new runner started in another child. Nothing may run: the
 * namespace has a `pods: 0` ResourceQuota (capacity 0 is not a valid option,
 * `capacity.total` is at least 1; the quota keeps the runner as configured and
 * shows, in its one refused create, which task it would create first). Prints
 * the submits' API requests per task by verb (the runner's service account,
 * audit log) and etcd WAL bytes per task (etcd-wal.ts), then the restore: from
 * the new runner's createPodRunner call to its queue holding all N
 * (`queueDepth === N`), its requests, whether `list()` is in submit order and
 * whether the first pod create it asked for is the first task submitted. The
 * new runner's quota pause is 10 ms (`requeueDelayMs`; 1000 by default): its
 * first create, refused by the quota, holds that task out of the queue until
 * the pause ends, and the restore time is not to include a pause the bench
 * made. On
 * the kwok instance ROLLCALL_TESTENV_ROOT / _PORT_BASE name; no pod is made.
 */
import { execSync, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { AuditLog, type AuditEvent, KubeAdmin, machine, requireTestEnv, up } from '@rollcall/tools/testenv';
import { idleWalRate, walWindow } from './etcd-wal.js';

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const load = () => loadavg()[0]!.toFixed(1);

/** A runner child: its stdout lines as they come, a wait for the line starting with a word, its exit. */
function runnerChild(arg: unknown) {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./restore-child.mjs', import.meta.url)), JSON.stringify(arg)], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  let stderr = '';
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      lines.push(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
    }
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exit = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  const line = async (word: string): Promise<string[]> => {
    for (;;) {
      const found = lines.find((l) => l.startsWith(`${word} `));
      if (found) return found.split(' ').slice(1);
      const exited = await Promise.race([exit.then(() => true), new Promise<false>((resolve) => waiters.push(() => resolve(false)))]);
      if (exited && !lines.some((l) => l.startsWith(`${word} `))) throw new Error(`the runner child exited before printing ${word}: ${stderr}`);
    }
  };
  return { line, exit, go: () => child.stdin.write('go\n'), kill: () => child.kill('SIGKILL') };
}

const byVerb = (events: AuditEvent[]) =>
  Object.entries(
    events.reduce<Record<string, number>>((acc, e) => {
      const key = `${e.verb} ${e.objectRef?.resource ?? ''}${(e.responseStatus?.code ?? 0) >= 400 ? ` answered ${e.responseStatus!.code}` : ''}`;
      acc[key] = (acc[key] ?? 0) + 1;
      return acc;
    }, {}),
  )
    .sort()
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');

export async function benchRestore(count: number): Promise<void> {
  await up(['kubernetes']);
  // after `up`: these read the instance's env file when loaded
  const { enforcedPodQuota, untilAuthorized } = await import('../test/runner-env.js');
  const { serviceAccountKubeconfig } = await import('@rollcall/tools/testenv');
  const admin = new KubeAdmin();
  const namespace = await admin.namespace('restore-bench', { forPods: true });
  await admin.applyManifest('rollcall-pod-runner.yaml', namespace);
  await untilAuthorized(namespace, 'rollcall-pod-runner');
  await enforcedPodQuota(namespace, 'no-pods', 0);
  const kubeconfig = await serviceAccountKubeconfig(namespace, 'rollcall-pod-runner');
  const user = `system:serviceaccount:${namespace}:rollcall-pod-runner`;
  const audit = new AuditLog(requireTestEnv('kubernetes').auditLogPath, async (name) => {
    await admin.core.readNamespacedConfigMap({ namespace, name }).catch(() => undefined);
  });
  const idleRate = await idleWalRate();
  const arg = { namespace, kubeconfig, name: 'restore', count };

  const loadBefore = load();
  const first = runnerChild({ ...arg, mode: 'submit' });
  await first.line('READY');
  log(`submitting ${count} tasks in ${namespace}`);
  const submitWindow = audit.open();
  const wal = await walWindow(idleRate);
  first.go();
  const [submitMs] = await first.line('SUBMITTED');
  const walDelta = await wal.close();
  first.kill();
  const signal = await first.exit;
  const submitRequests = (await audit.requests(submitWindow)).filter((e) => e.user?.username === user);
  const loadMiddle = load();

  log(`killed (${signal}); restoring`);
  const restoreWindow = audit.open();
  const second = runnerChild({ ...arg, mode: 'restore', requeueDelayMs: 10 });
  const [readyMs, readyDepth] = await second.line('READY');
  const [restoredMs, depth, order] = await second.line('RESTORED');
  const [firstCreate] = await second.line('FIRST-CREATE');
  second.kill();
  await second.exit;
  const restoreRequests = (await audit.requests(restoreWindow)).filter((e) => e.user?.username === user);
  const loadAfter = load();
  await admin.core.deleteNamespace({ name: namespace });

  const firstSubmitted = `task-${String(count - 1).padStart(6, '0')}`;
  console.log(`${new Date().toISOString()}, commit ${execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim()}, ${machine()}`);
  console.log();
  console.log('| queued tasks | submits wall time (16 in flight) | API requests per task (submits) | etcd WAL bytes per task (submits) | first runner | restore: createPodRunner resolved | restore: queueDepth = N | list() in submit order | first create asked for | load average (1 min) before → killed → after |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  console.log(
    `| ${count} | ${(Number(submitMs) / 1000).toFixed(1)} s | ${(submitRequests.length / count).toFixed(2)} | ${Math.round(walDelta / count)} (idle ${Math.round(idleRate * 1000)} B/s subtracted) | ${signal} | ${readyMs} ms (queueDepth ${readyDepth}) | ${restoredMs} ms (queueDepth ${depth}) | ${order === 'in-order' ? 'yes' : `no: ${order}`} | ${firstCreate === firstSubmitted ? `the first submitted (${firstCreate})` : `${firstCreate}, not the first submitted (${firstSubmitted})`} | ${loadBefore} → ${loadMiddle} → ${loadAfter} |`,
  );
  console.log();
  console.log(`Requests by the runner's service account, from the audit log: submits (the first runner, from its first submit to its last answer): ${byVerb(submitRequests)}; restore (the second runner, from its start to its queue restored): ${byVerb(restoreRequests)}.`);
}
