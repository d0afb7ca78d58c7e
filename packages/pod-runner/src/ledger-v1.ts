import { hasCode, SchemaMismatchError, StoreConflictError } from '@rollcall/core';
import type { ApiClient, ObjectMeta, RequestContext } from '@rollcall/kube-client';
import { BACKEND } from './errors.js';
import { decodeLedger, FORMAT_KEY, ledgerName, tombstoneStatus, type LedgerEntry } from './ledger-format.js';
import type { RetryPolicy } from './retry-policy.js';
import { restoreOrder } from './submit-order.js';
import type { Task } from './task.js';
import { TASK_RECORD_FORMAT, type TaskRecordBody } from './task-record.js';
import type { TaskStore } from './task-store.js';

/** The data key of a moved ledger that says how many entries were moved. */
export const MOVED_KEY = 'moved';

/** How often the move reads the ledger again after its PUT lost to a write by an older runner (a follower's submit). */
const MAX_ROUNDS = 10;

/** What {@link moveLedgerV1} takes. */
export interface LedgerMoveOptions {
  client: ApiClient;
  namespace: string;
  runner: string;
  /** Where the records go: the runner's store. */
  store: TaskStore;
  /** The term the records are created in (stamped as their write term). */
  term: number;
  /**
   * The template rule a queued task's pod is built from now, and that rule's
   * retry policy: a v1 entry did not record them (its runner chose again at
   * each build). The runner's template chooser.
   */
  templateOf(task: Task): { template: string; retry?: RetryPolicy };
}

/** What {@link moveLedgerV1} did. */
export interface LedgerMoveResult {
  /** `absent`: no v1 ledger; `moved`: moved now; `already`: a runner had moved it before. */
  outcome: 'absent' | 'moved' | 'already';
  /** Entries moved (now or, for `already`, as the ledger says). */
  moved: number;
  /** Of those moved now, how many had a record already (a move killed midway and run again). */
  existed: number;
}

interface LedgerObject {
  metadata: ObjectMeta;
  data?: Record<string, string>;
}

/** A v1 entry as a v2 record body: everything it held, `done` with its `ackedAt`. */
export function recordBodyOf(taskId: string, entry: LedgerEntry, templateOf: LedgerMoveOptions['templateOf']): TaskRecordBody {
  const v = TASK_RECORD_FORMAT;
  if (entry.state === 'queued') {
    const { template, retry } = templateOf(entry.task);
    return {
      v,
      state: 'queued',
      task: entry.task,
      template,
      specHash: entry.specHash,
      ...(retry ? { retry } : {}),
      submittedAt: entry.submittedAt,
      seq: entry.seq ?? 0,
      ...(entry.retryAt !== undefined ? { retryAt: entry.retryAt } : {}),
      ...(entry.previousAttempts ? { previousAttempts: entry.previousAttempts } : {}),
    };
  }
  const status = entry.state === 'done' ? tombstoneStatus(entry) : entry.status;
  // an ended entry kept no task: what its status says of it (a resubmit brings its own)
  const task: Task = { taskId, taskType: status.taskType, ...(Object.keys(status.tags).length > 0 ? { tags: status.tags } : {}), attempt: status.attempt };
  return {
    v,
    state: entry.state,
    task,
    template: status.template,
    specHash: entry.specHash ?? '',
    submittedAt: status.submittedAt,
    seq: 0,
    ...(status.previousAttempts ? { previousAttempts: status.previousAttempts } : {}),
    status,
    ...(entry.state === 'done' ? { ackedAt: entry.ackedAt } : {}),
  };
}

/**
 * Moves a runner's v1 ledger (`pod-runner-<runner>-ledger`) to task records,
 * once, in the first term of a v2 runner: (1) every entry's record is created
 * if absent, in restore order; (2) the ledger is replaced, by a PUT at the
 * resourceVersion read, with `{format: "2", moved: "<n>"}`. Killed between the
 * two, it runs again and finds the records it made (create-if-absent: no
 * duplicate). A PUT refused because an older runner changed the ledger
 * meanwhile reads it again and moves what it holds now. A v1 runner then
 * reads format 2 and refuses (SCHEMA_MISMATCH) instead of starting on an
 * empty ledger. A corrupt entry stops the move (CORRUPT_RECORD naming it),
 * the ledger unchanged.
 */
export async function moveLedgerV1(options: LedgerMoveOptions): Promise<LedgerMoveResult> {
  const name = ledgerName(options.runner);
  const path = `/api/v1/namespaces/${options.namespace}/configmaps/${name}`;
  const context = (verb: string): RequestContext => ({ verb, resource: 'configmaps', namespace: options.namespace, name });
  for (let round = 0; round < MAX_ROUNDS; round++) {
    let ledger: LedgerObject;
    try {
      ledger = await options.client.request<LedgerObject>({ method: 'GET', path, context: context('get') });
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) return { outcome: 'absent', moved: 0, existed: 0 };
      throw err;
    }
    const format = ledger.data?.[FORMAT_KEY];
    if (format === String(TASK_RECORD_FORMAT)) return { outcome: 'already', moved: Number(ledger.data?.[MOVED_KEY] ?? 0), existed: 0 };
    if (Number(format) > TASK_RECORD_FORMAT) {
      throw new SchemaMismatchError(`task ledger ${name} has format ${JSON.stringify(format)}, newer than this runner's ${TASK_RECORD_FORMAT}: upgrade the runner`, { backend: BACKEND });
    }
    const entries = decodeLedger(ledger.data, name);
    let existed = 0;
    for (const [taskId, entry] of restoreOrder(entries)) {
      const outcome = await options.store.create(recordBodyOf(taskId, entry, options.templateOf), options.term);
      if (outcome.type === 'exists') existed += 1;
    }
    try {
      await options.client.request({
        method: 'PUT',
        path,
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...ledger.metadata, resourceVersion: ledger.metadata.resourceVersion }, data: { [FORMAT_KEY]: String(TASK_RECORD_FORMAT), [MOVED_KEY]: String(entries.size) } },
        context: context('update'),
      });
      return { outcome: 'moved', moved: entries.size, existed };
    } catch (err) {
      // changed since read (an older follower's submit) or deleted: read it again; every create above is create-if-absent
      if (!hasCode(err, 'CONFLICT') && !hasCode(err, 'NOT_FOUND')) throw err;
    }
  }
  throw new StoreConflictError('CONFLICT', `task ledger ${name} changed under each of ${MAX_ROUNDS} moves: is a runner of the previous version still writing it?`, { backend: BACKEND });
}
