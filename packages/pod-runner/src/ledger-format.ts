import { CorruptRecordError, SchemaMismatchError } from '@rollcall/core';
import { BACKEND } from './errors.js';
import type { AttemptOutcome, Task, TaskStatus } from './task.js';

/**
 * The ledger's layout version, in its `format` key and in every entry's `v`.
 * A runner reads every version up to its own; a newer one is SCHEMA_MISMATCH
 * (an older runner must not rewrite what it cannot read).
 */
export const LEDGER_FORMAT = 1;

/** The data key of a task's entry: one key per task, so a write touches only its own. */
export const ENTRY_PREFIX = 'task.';
export const FORMAT_KEY = 'format';

/** The name of a runner's ledger ConfigMap: `pod-runner-<runner>-ledger` (what an RBAC rule's resourceNames can name). */
export const ledgerName = (runner: string) => `pod-runner-${runner}-ledger`;

/** A task accepted and not yet ended: enough to build its pod again. */
export interface QueuedEntry {
  v: number;
  state: 'queued';
  /** The task as submitted, its timeouts merged and `attempt` the one to run next. */
  task: Task;
  submittedAt: string;
  /** Orders entries of the same `submittedAt` millisecond, as their process submitted them (submit-order.ts); absent in entries of earlier runners. */
  seq?: number;
  specHash: string;
  /** Earlier attempts the retry policy retried. */
  previousAttempts?: AttemptOutcome[];
  /** A retry's backoff ends here (wall-clock ms): the attempt is queued then, not before. */
  retryAt?: number;
}

/** A terminal status not yet acknowledged by `onStatus`: delivered again until it is. */
export interface FinishedEntry {
  v: number;
  state: 'finished';
  status: TaskStatus;
  specHash?: string;
}

/** A tombstone: the task ended and `onStatus` acknowledged it; a resubmit of this attempt (or an earlier one) is answered from here and runs nothing. */
export interface DoneEntry {
  v: number;
  state: 'done';
  status: Pick<TaskStatus, 'taskId' | 'taskType' | 'attempt' | 'phase' | 'reason' | 'podName' | 'template' | 'submittedAt' | 'finishedAt'>;
  specHash?: string;
  /** When the acknowledgement was stored, wall-clock ms: retention counts from here. */
  ackedAt: number;
}

export type LedgerEntry = QueuedEntry | FinishedEntry | DoneEntry;

/** The tombstone of an acknowledged status: the few fields a resubmit is answered with. */
export function tombstone(status: TaskStatus, specHash: string | undefined, ackedAt: number): DoneEntry {
  const { taskId, taskType, attempt, phase, reason, podName, template, submittedAt, finishedAt } = status;
  const slim = Object.fromEntries(Object.entries({ taskId, taskType, attempt, phase, reason, podName, template, submittedAt, finishedAt }).filter(([, v]) => v !== undefined)) as DoneEntry['status'];
  return { v: LEDGER_FORMAT, state: 'done', status: slim, ...(specHash ? { specHash } : {}), ackedAt };
}

/** The status a tombstone answers a resubmit with. */
export function tombstoneStatus(entry: DoneEntry): TaskStatus {
  return { tags: {}, ...entry.status };
}

export function encodeEntry(entry: LedgerEntry): string {
  return JSON.stringify(entry);
}

function newer(version: unknown, where: string, ledger: string): SchemaMismatchError {
  return new SchemaMismatchError(`${where} of task ledger ${ledger} has format ${JSON.stringify(version)}, newer than this runner's ${LEDGER_FORMAT}: upgrade the runner (an older one must not rewrite it)`, { backend: BACKEND });
}

/** Checks the ledger's `format` key: absent (a new ledger) or a version this runner reads. */
export function checkFormat(format: string | undefined, ledger: string): void {
  if (format === undefined) return;
  const version = Number(format);
  if (!Number.isInteger(version) || version < 1) throw new CorruptRecordError(FORMAT_KEY, `the format key of task ledger ${ledger} is ${JSON.stringify(format)}, not a version number`, { backend: BACKEND });
  if (version > LEDGER_FORMAT) throw newer(format, 'the format key', ledger);
}

/**
 * One entry from its stored text. Every version up to {@link LEDGER_FORMAT} is
 * read (version 1 is the only one so far: a later version converts older entries
 * here); a newer one is SCHEMA_MISMATCH, garbage CORRUPT_RECORD naming the key.
 */
export function decodeEntry(key: string, text: string, ledger: string): LedgerEntry {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new CorruptRecordError(key, `entry ${key} of task ledger ${ledger} is not JSON`, { backend: BACKEND, cause: err });
  }
  const entry = value as Partial<LedgerEntry> | null;
  if (!entry || typeof entry !== 'object' || !Number.isInteger(entry.v) || (entry.v as number) < 1) {
    throw new CorruptRecordError(key, `entry ${key} of task ledger ${ledger} has no format version`, { backend: BACKEND });
  }
  if ((entry.v as number) > LEDGER_FORMAT) throw newer(entry.v, `entry ${key}`, ledger);
  const ok =
    (entry.state === 'queued' && typeof (entry as QueuedEntry).task?.taskId === 'string' && typeof (entry as QueuedEntry).submittedAt === 'string') ||
    (entry.state === 'finished' && typeof (entry as FinishedEntry).status?.taskId === 'string') ||
    (entry.state === 'done' && typeof (entry as DoneEntry).status?.taskId === 'string' && typeof (entry as DoneEntry).ackedAt === 'number');
  if (!ok) throw new CorruptRecordError(key, `entry ${key} of task ledger ${ledger} is not a queued, finished or done task`, { backend: BACKEND });
  return entry as LedgerEntry;
}

/** Every entry of a ledger's data, by task id. */
export function decodeLedger(data: Record<string, string> | undefined, ledger: string): Map<string, LedgerEntry> {
  checkFormat(data?.[FORMAT_KEY], ledger);
  const entries = new Map<string, LedgerEntry>();
  for (const [key, text] of Object.entries(data ?? {})) {
    if (!key.startsWith(ENTRY_PREFIX)) continue;
    entries.set(key.slice(ENTRY_PREFIX.length), decodeEntry(key, text, ledger));
  }
  return entries;
}
