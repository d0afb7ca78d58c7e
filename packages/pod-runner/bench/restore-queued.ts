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
 * new runner's quota pause is 10 ms (`requeueDelayMs`; 1000 by default): the
 * task of its first create, refused by the quota, is back in line at once
 * (before issue 35's fix it was out of the queue until its own sync after the
 * pause, and a sync of another task at the pause's end could give the slot
 * to the next in line), and the restore time is not to include a pause the
 * bench made. On
 * the kwok instance ROLLCALL_TESTENV_ROOT / _PORT_BASE name; no pod is made.
 */
import { execSync, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@rollcall/conformance';
import { AuditLog, type AuditEvent, KubeAdmin, machine, requireTestEnv, up } from '@rollcall/tools/testenv';
import { idleWalRate, walWindow } from './etcd-wal.js';

/** How long the new runner has to fill its queue, and then to ask for its first pod. Milliseconds. */
const RESTORE_BOUND_MS = 180_000;
const FIRST_CREATE_BOUND_MS = 30_000;

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);
const load = () => loadavg()[0]!.toFixed(1);

/** A runner child: its stdout lines as they come, a wait for the line starting with a word, its exit. */
function runnerChild(arg: unknown) {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./restore-child.mjs', import.meta.url)), JSON.stringify(arg)], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let lastDepth = '';
  const waiters: Array<() => void> = [];
  let stderr = '';
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      if (line.startsWith('DEPTH ')) {
        lastDepth = line;
        log(`runner child: ${line}`);
      }
      else lines.push(line);
      buffered = buffered.slice(nl + 1);
    }
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    // the runner's own logs, told as they come (a quota refusal is info)
    process.stderr.write(chunk.replace(/^(?=.)/gm, `[bench] runner child ${child.pid}: `));
  });
  const exit = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  /** The words after `word` on its line; undefined if none came within `withinMs`. */
  const line = async (word: string, withinMs = Infinity): Promise<string[] | undefined> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), Math.min(withinMs, 2 ** 31 - 1))));
    try {
      for (;;) {
        const found = lines.find((l) => l.startsWith(`${word} `));
        if (found) return found.split(' ').slice(1);
        const next = await Promise.race([late, exit.then(() => 'exited' as const), new Promise<'line'>((resolve) => waiters.push(() => resolve('line')))]);
        if (next === 'late') return undefined;
        if (next === 'exited' && !lines.some((l) => l.startsWith(`${word} `))) throw new Error(`the runner child exited before printing ${word}: ${stderr}`);
      }
    } finally {
      clearTimeout(timer);
    }
  };
  const must = async (word: string): Promise<string[]> => (await line(word))!;
  return { line, must, lastDepth: () => lastDepth, exit, go: () => child.stdin.write('go\n'), kill: () => child.kill('SIGKILL') };
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
  await first.must('READY');
  log(`submitting ${count} tasks in ${namespace}`);
  const submitWindow = audit.open();
  const wal = await walWindow(idleRate);
  first.go();
  const [submitMs] = await first.must('SUBMITTED');
  const walDelta = await wal.close();
  first.kill();
  const signal = await first.exit;
  const submitRequests = (await audit.requests(submitWindow)).filter((e) => e.user?.username === user);
  const loadMiddle = load();

  log(`killed (${signal}); restoring`);
  const restoreWindow = audit.open();
  const second = runnerChild({ ...arg, mode: 'restore', requeueDelayMs: 10 });
  const [readyMs, readyDepth] = await second.must('READY');
  // bounded: a restore that never fills the queue is a figure too
  const restored = await second.line('RESTORED', RESTORE_BOUND_MS);
  const [firstCreate] = (await second.line('FIRST-CREATE', FIRST_CREATE_BOUND_MS)) ?? [];
  second.kill();
  await second.exit;
  const restoreRequests = (await audit.requests(restoreWindow)).filter((e) => e.user?.username === user);
  const loadAfter = load();
  await admin.core.deleteNamespace({ name: namespace });
  // its N records' deletes are etcd writes: gone before the next run's window opens
  log(`deleting ${namespace}`);
  await waitFor(async () => (await admin.core.readNamespace({ name: namespace }).then(() => false, () => true)) || undefined, 300_000, `namespace ${namespace} to be deleted`);

  const firstSubmitted = `task-${String(count - 1).padStart(6, '0')}`;
  console.log(`${new Date().toISOString()}, commit ${execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim()}, ${machine()}`);
  console.log();
  console.log('| queued tasks | submits wall time (16 in flight) | API requests per task (submits) | etcd WAL bytes per task (submits) | first runner | restore: createPodRunner resolved | restore: queueDepth = N | list() in submit order | first create asked for | load average (1 min) before → killed → after |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  console.log(
    `| ${count} | ${(Number(submitMs) / 1000).toFixed(1)} s | ${(submitRequests.length / count).toFixed(2)} | ${Math.round(walDelta / count)} (idle ${Math.round(idleRate * 1000)} B/s subtracted) | ${signal} | ${readyMs} ms (queueDepth ${readyDepth}) | ${restored ? `${restored[0]} ms (queueDepth ${restored[1]})` : `not within ${RESTORE_BOUND_MS / 1000} s (last: ${second.lastDepth()})`} | ${!restored ? '—' : restored[2] === 'in-order' ? 'yes' : `no: ${restored[2]}`} | ${firstCreate === undefined ? `none within ${FIRST_CREATE_BOUND_MS / 1000} s` : firstCreate === firstSubmitted ? `the first submitted (${firstCreate})` : `${firstCreate}, not the first submitted (${firstSubmitted})`} | ${loadBefore} → ${loadMiddle} → ${loadAfter} |`,
  );
  console.log();
  console.log(`Requests by the runner's service account, from the audit log: submits (the first runner, from its first submit to its last answer): ${byVerb(submitRequests)}; restore (the second runner, from its start to its queue restored): ${byVerb(restoreRequests)}.`);
}
