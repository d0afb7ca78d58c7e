import { envLayer, readLayers, type ConfigLayer } from '@rollcall/core';
import type { TaskListing, TaskStatus, TaskView } from '@rollcall/pod-runner';
import { loadPodRunner } from '../pod-runner.js';
import { ExitCode, usageError } from '../errors.js';
import { age, compactJson, outputFormat, printJson, since, table } from '../output.js';
import { printable } from '../terminal.js';

/** Where a runner's task records and pods are: `rollcall tasks` reads them, it needs no registry. */
export interface TaskFlags {
  namespace?: string;
  kubeconfig?: string;
  context?: string;
  runner?: string;
  output?: string;
  json?: boolean;
  /** The runner's log directory (its `logs.dir`): where `tasks logs` reads a task whose pod is gone. */
  logDir?: string;
}

async function withView<T>(flags: TaskFlags, action: (view: TaskView) => Promise<T>): Promise<T> {
  const { openTaskView } = await loadPodRunner('rollcall tasks');
  // the registry's keys where the flags leave them out: the same layers, read by core's resolver
  const layers: ConfigLayer[] = [envLayer(process.env), { layer: 'flag', values: { 'registry.kubernetes.namespace': flags.namespace, 'registry.kubernetes.kubeconfig': flags.kubeconfig } }];
  const view = openTaskView({
    namespace: readLayers(layers, 'registry.', 'registry.kubernetes.namespace') as string | undefined,
    kubeconfig: readLayers(layers, 'registry.', 'registry.kubernetes.kubeconfig') as string | undefined,
    context: flags.context,
    name: flags.runner,
    logs: { dir: flags.logDir },
  });
  try {
    return await action(view);
  } finally {
    view.close();
  }
}

const detail = (s: TaskStatus) => s.pendingCause ?? s.reason ?? '';

/** Where a row comes from: its pod, and the task's record (`finished`: not acknowledged yet; `acknowledged`: acknowledged by the runner's onStatus). */
const source = (s: TaskListing) => [s.source !== 'record' ? 'pod' : '', s.record ? `record:${s.record === 'done' ? 'acknowledged' : s.record}` : ''].filter(Boolean).join('+');

/** `rollcall tasks [list]`: every task id and attempt of the runner, from its task records (queued, running, and ended with the pod gone) and its pods. */
export async function tasksListCommand(flags: TaskFlags): Promise<void> {
  const format = outputFormat(flags);
  await withView(flags, async (view) => {
    const rows = await view.list();
    // a record this version cannot read (corrupt, or a newer runner's) is left out, and said so
    for (const r of view.unreadable()) process.stderr.write(`rollcall: warning: task record ${r.name} skipped: ${r.code}: ${printable(r.message)}\n`);
    if (format === 'json') return printJson(rows);
    process.stdout.write(
      `${table(['task', 'attempt', 'type', 'phase', 'detail', 'exit', 'age', 'pod', 'source'], rows.map((s) => [s.taskId, s.attempt, s.taskType, s.phase, detail(s), s.exitCode ?? '-', age(since(s.submittedAt)), s.source === 'record' ? '-' : s.podName, source(s)]))}\n`,
    );
  });
}

/** `rollcall tasks show <id>`: one task's status and result: its record's (its pod's while it runs); with no record (a first-generation runner's task), its latest pod's. */
export async function tasksShowCommand(taskId: string, flags: TaskFlags): Promise<void> {
  const format = outputFormat(flags);
  await withView(flags, async (view) => {
    const status = await view.get(taskId);
    if (!status) {
      const { StoreConflictError } = await import('@rollcall/core');
      throw new StoreConflictError('NOT_FOUND', `no record and no pod of task ${JSON.stringify(taskId)} for runner ${view.name} in namespace ${view.namespace}`, { backend: 'pod-runner' });
    }
    if (format === 'json') return printJson(status);
    const rows: [string, string][] = [
      ['task', `${status.taskId} (attempt ${status.attempt})`],
      ['type', status.taskType],
      ['phase', status.phase],
      ['detail', [detail(status), status.message].filter(Boolean).join(': ') || '-'],
      ['exit code', status.exitCode === undefined ? '-' : String(status.exitCode)],
      ['result', status.result === undefined ? (status.terminationMessage ?? '-') : compactJson(status.result, 400)],
      ['pod', `${status.podName} (template ${status.template})`],
      ['submitted', status.submittedAt],
      ['started', status.startedAt ?? '-'],
      ['finished', status.finishedAt ?? '-'],
    ];
    for (const [key, value] of rows) process.stdout.write(`${`${key}:`.padEnd(11)} ${printable(value)}\n`);
  });
}

/** `rollcall tasks logs <id> [--follow]`. */
export async function tasksLogsCommand(taskId: string, flags: TaskFlags & { follow?: boolean; tail?: string; timestamps?: boolean }): Promise<void> {
  await withView(flags, async (view) => {
    const lines = await view.logs(taskId, { follow: flags.follow, ...(flags.tail ? { tailLines: Number(flags.tail) } : {}) });
    for await (const line of lines) process.stdout.write(`${flags.timestamps ? `${line.time} ` : ''}${line.text}\n`);
  });
}

/** What `tasks cancel` says for each outcome. */
const CANCEL_SAID = {
  cancelled: 'cancelled',
  ended: 'not cancelled: it had ended already',
  'already-ended': 'not cancelled: it had ended already; nothing was changed',
  unconfirmed: 'cancel requested on its task record, but no runner confirmed',
} as const;

/**
 * `rollcall tasks cancel <id> [--wait <s>]`: asks for the cancel on the
 * task's record (queued or running), then waits (the record's watch, bounded)
 * for the leading runner to record the task's end, and says what happened.
 * Exit 0 when a runner confirmed (or the task had ended), NOT_CONFIRMED (11)
 * when none did within the wait: the request stays on the record.
 */
export async function tasksCancelCommand(taskId: string, flags: TaskFlags & { reason?: string; wait?: string }): Promise<number> {
  const format = outputFormat(flags);
  const wait = flags.wait === undefined ? 30 : Number(flags.wait);
  if (flags.wait !== undefined && !/^\d+(\.\d+)?$/.test(flags.wait)) throw usageError(`--wait ${JSON.stringify(flags.wait)}: expected seconds, 0 or more`, 'e.g. --wait 60, or 0 not to wait');
  return withView(flags, async (view) => {
    const { outcome, status } = await view.cancel(taskId, flags.reason ?? 'cancelled with rollcall tasks cancel', { waitMs: wait * 1000 });
    const code = outcome === 'unconfirmed' ? ExitCode.NOT_CONFIRMED : ExitCode.OK;
    if (format === 'json') {
      printJson({ outcome, status });
      return code;
    }
    const detail = status.phase === 'cancelled' ? '' : ` (${status.phase}${status.reason ? `, ${status.reason}` : ''})`;
    process.stdout.write(`${printable(taskId)}: ${CANCEL_SAID[outcome]}${outcome === 'unconfirmed' ? ` within ${wait} s` : detail}${status.message && outcome === 'cancelled' ? `: ${status.message}` : ''}\n`);
    if (outcome === 'unconfirmed') process.stderr.write(`rollcall: the task may still run: no runner of ${view.name} leads in namespace ${view.namespace}, or it is slow; the request is kept on its record, and the runner that leads next cancels it (\`rollcall tasks show ${taskId}\`)\n`);
    return code;
  });
}
