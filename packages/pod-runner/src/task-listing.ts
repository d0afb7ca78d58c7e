import { type LedgerEntry, tombstoneStatus } from './ledger-format.js';
import { podName } from './pod-build.js';
import { isTerminal, type TaskStatus } from './task.js';

/** A task's ledger entry, as a listing names it: `finished` is not yet acknowledged by `onStatus`, `done` is (a tombstone). */
export type LedgerState = LedgerEntry['state'];

/** One row of {@link TaskView.list}: a task id and attempt, from its pod, its ledger entry, or both. */
export interface TaskListing extends TaskStatus {
  /** `pod`: only its pod shows it; `ledger`: no pod (queued, or ended and its pod gone); `pod+ledger`: both. */
  source: 'pod' | 'ledger' | 'pod+ledger';
  /** The ledger's entry for this attempt, if it holds one. */
  ledger?: LedgerState;
}

/** A ledger entry's status (a queued one's pod name is the one its pod will have): queued (in a retry's backoff while `retryAt` is ahead of `nowMs`), finished or a tombstone's. */
function ledgerStatus(runner: string, taskId: string, entry: LedgerEntry, nowMs: number): TaskStatus {
  if (entry.state === 'finished') return entry.status;
  if (entry.state === 'done') return tombstoneStatus(entry);
  const { task } = entry;
  const attempt = task.attempt ?? 1;
  const status: TaskStatus = { taskId, taskType: task.taskType, tags: { ...task.tags }, attempt, phase: 'queued', podName: podName(runner, taskId, attempt), template: '', submittedAt: entry.submittedAt };
  if (entry.previousAttempts) status.previousAttempts = entry.previousAttempts;
  if (entry.retryAt !== undefined && entry.retryAt > nowMs) Object.assign(status, { reason: 'RetryBackoff', message: `attempt ${attempt} at ${new Date(entry.retryAt).toISOString()}` });
  return status;
}

/**
 * The runner's tasks from both places they are kept, one row per task id and
 * attempt: the pods (what runs) and the ledger (what is queued, and what
 * ended, acknowledged or not, whose pod may be gone). For an attempt in both,
 * the ledger's end is the one the runner stored (the pod's may be a state the
 * runner has not judged yet, or retried); a ledger entry still `queued` beside
 * a pod means the pod was made, so the pod's status is the newer. Sorted by
 * submit time, then id and attempt.
 */
export function listTasks(runner: string, pods: TaskStatus[], ledger: Map<string, LedgerEntry>, nowMs: number): TaskListing[] {
  const rows = new Map<string, TaskListing>();
  const key = (s: Pick<TaskStatus, 'taskId' | 'attempt'>) => `${s.taskId}\u0000${s.attempt}`;
  for (const status of pods) rows.set(key(status), { ...status, source: 'pod' });
  for (const [taskId, entry] of ledger) {
    const status = ledgerStatus(runner, taskId, entry, nowMs);
    const pod = rows.get(key(status));
    if (!pod) {
      rows.set(key(status), { ...status, source: 'ledger', ledger: entry.state });
      continue;
    }
    const stored = isTerminal(status) ? { ...pod, ...status } : pod;
    rows.set(key(status), { ...stored, podName: pod.podName, template: pod.template || status.template, source: 'pod+ledger', ledger: entry.state });
  }
  return [...rows.values()].sort((a, b) => a.submittedAt.localeCompare(b.submittedAt) || a.taskId.localeCompare(b.taskId) || a.attempt - b.attempt);
}
