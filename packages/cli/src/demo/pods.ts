import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ChildHandle } from '@rollcall/child-harness';
import { createRegistry } from '@rollcall/core';
import { resolveCliConfig, type ConfigFlags } from '../config.js';
import { ExitCode, usageError } from '../errors.js';
import { table } from '../output.js';
import { metricsPort, type MetricsFlags } from '../metrics.js';
import { loadPodRunner } from '../pod-runner.js';
import type { NodeMessage, PodsSpec } from './node.js';

const BIN = fileURLToPath(new URL('../bin.js', import.meta.url));
const RUNNERS = ['runner-a', 'runner-b'];

/** Two task types on two templates; kwok (the test control plane's kubelet) ends each container as its annotations say. */
function podsSpec(name: string): PodsSpec {
  const tasks = Array.from({ length: 10 }, (_, i) => {
    const taskType = i % 2 === 0 ? 'etl' : 'report';
    return { taskId: `${taskType}-${i}`, taskType, annotations: { 'kwok.rollcall.dev/exit-code': '0', 'kwok.rollcall.dev/run-for': `${3 + (i % 4)}s`, 'kwok.rollcall.dev/termination-message': JSON.stringify({ rows: 100 * (i + 1) }) } };
  });
  return {
    name,
    templates: [
      { name: 'etl-pool', taskTypes: ['etl'], template: { metadata: { labels: { pool: 'etl' } }, spec: { containers: [{ name: 'etl', image: 'registry.example/etl:1', resources: { requests: { cpu: '500m' } } }] } } },
      { name: 'report-pool', taskTypes: ['report'], template: { metadata: { labels: { pool: 'report' } }, spec: { containers: [{ name: 'report', image: 'registry.example/report:1' }] } } },
    ],
    tasks,
  };
}

/**
 * `rollcall demo --pods`: two pod-runner processes of one pair on Kubernetes
 * (the test control plane and its kwok), both submitting the same ten tasks of
 * two types; only the elected one creates pods. Once tasks run, the leader is
 * killed with SIGKILL; the other takes over, re-attaches to the pods and
 * reports each task once. Prints what happened and a summary; exit 0 when every
 * task succeeded and was reported exactly once.
 */
export async function demoPodsCommand(flags: ConfigFlags & MetricsFlags): Promise<number> {
  const port = metricsPort(flags);
  const timings = { 'registry.cluster': 'demo-pods', 'registry.election.leaseDurationMs': 3000, 'registry.election.renewDeadlineMs': 2000, 'registry.election.retryPeriodMs': 500 };
  const config = await resolveCliConfig(flags, process.env, { 'registry.type': 'kubernetes', ...timings });
  if (config.resolved.type !== 'kubernetes') throw usageError('demo --pods runs tasks as pods: it needs registry.type=kubernetes', 'rollcall demo --pods -o kubernetes.namespace=rollcall-test');
  await loadPodRunner('rollcall demo --pods'); // before any runner process: a missing package is one clear error
  const dir = mkdtempSync(join(tmpdir(), 'rollcall-demo-pods-'));
  const name = `demo-${randomBytes(2).toString('hex')}`;
  const started = Date.now();
  const log = (line: string) => process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${line}\n`);
  const configFile = join(dir, 'config.json');
  const specFile = join(dir, 'pods.json');
  writeFileSync(configFile, JSON.stringify(config.flat));
  const spec = podsSpec(name);
  writeFileSync(specFile, JSON.stringify(spec));

  const children = new Map<string, ChildHandle<never, NodeMessage>>();
  const reports = new Map<string, { by: string; phase: string; exitCode?: number; result?: unknown }[]>();
  const running = new Set<string>();
  let leader: { id: string; token: number } | undefined;
  const waiters = new Set<() => void>();
  const changed = () => waiters.forEach((w) => w());
  const until = (what: string, timeoutMs: number, done: () => boolean) =>
    new Promise<void>((resolve, reject) => {
      const check = () => done() && (waiters.delete(check), clearTimeout(timer), resolve());
      const timer = setTimeout(() => (waiters.delete(check), reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`))), timeoutMs);
      waiters.add(check);
      check();
    });

  // The temp dir goes with every failure, this one too (the try below starts after it).
  const view = await createRegistry({ ...config.flat, 'registry.identity': 'demo-view' } as never).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  const observer = view.observe(`pod-runner-${name}`);
  observer.on('changed', ({ leader: now }) => {
    if (now && now.identity !== leader?.id) log(`${now.identity} leads the runner election (fencing token ${now.fencingToken})`);
    leader = now ? { id: now.identity, token: now.fencingToken ?? 0 } : undefined;
    changed();
  });
  try {
    for (const [index, id] of RUNNERS.entries()) {
      // --metrics-port P: runner-a on P, runner-b on P + 1 (0: each on any free port)
      const metrics = port === undefined ? [] : ['--metrics-port', String(port === 0 ? 0 : port + index)];
      const child = new ChildHandle<never, NodeMessage>({ entry: BIN, args: ['demo-node', '--kind', 'pod-runner', '--id', id, '--config', configFile, '--pods', specFile, ...metrics], stdout: 'ignore', stderr: 'pipe', label: id });
      children.set(id, child);
      child.onEvent((m) => {
        if (m.type === 'metrics') log(`${m.id} serves its metrics (the runner's and its registry's) at http://localhost:${m.port}/metrics`);
        if (m.type !== 'task') return;
        const s = m.status;
        if (s.phase === 'running' && !running.has(s.taskId)) (running.add(s.taskId), log(`${s.taskId} running (pod ${s.podName}, template ${s.template}) — seen by ${m.id}`));
        if (['succeeded', 'failed', 'timed-out', 'cancelled', 'lost'].includes(s.phase)) {
          reports.set(s.taskId, [...(reports.get(s.taskId) ?? []), { by: m.id, phase: s.phase, exitCode: s.exitCode, result: s.result }]);
          log(`${s.taskId} ${s.phase}${s.exitCode === undefined ? '' : ` (exit ${s.exitCode})`}, result ${JSON.stringify(s.result ?? null)} — reported by ${m.id}`);
        }
        changed();
      });
    }
    log(`two runners (${RUNNERS.join(', ')}) of pair ${name} each submit the same ${spec.tasks.length} tasks; only the leader creates pods`);
    await until('a runner to lead and three tasks to run', 60_000, () => leader !== undefined && running.size >= 3);
    const killed = leader!;
    children.get(killed.id)!.signal('SIGKILL');
    log(`SIGKILL ${killed.id}, the leader, with ${running.size} tasks running`);
    await until('the other runner to take over', 30_000, () => leader !== undefined && leader.id !== killed.id);
    await until('every task to end', 120_000, () => spec.tasks.every((t) => reports.has(t.taskId)));
    const rows = spec.tasks.map((t) => {
      const r = reports.get(t.taskId)!;
      return [t.taskId, t.taskType, r.map((x) => x.phase).join(', '), r.map((x) => x.by).join(', '), JSON.stringify(r[0]!.result ?? null)];
    });
    process.stdout.write(`\n${table(['task', 'type', 'phase', 'reported by', 'result'], rows)}\n`);
    const once = spec.tasks.every((t) => reports.get(t.taskId)!.length === 1 && reports.get(t.taskId)![0]!.phase === 'succeeded');
    process.stdout.write(once ? `\nevery task succeeded and was reported exactly once, across the leader's SIGKILL (${killed.id} → ${leader!.id}, fencing token ${killed.token} → ${leader!.token})\n` : '\nsome task did not succeed exactly once: see above\n');
    return once ? ExitCode.OK : ExitCode.CHECK_FAILED;
  } finally {
    for (const child of children.values()) child.signal('SIGTERM');
    await Promise.all([...children.values()].map((c) => c.exited));
    observer.close?.();
    await view.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
