import type { KubeConfig } from '@kubernetes/client-node';
import { type Clock, DEFAULT_REQUEST_TIMEOUT_MS, hasCode, InvalidArgumentError, type Logger, RegistryError, StoreConflictError } from '@rollcall/core';
import { ApiClient, loadKubeConfig, resolveNamespace, userAgent } from '@rollcall/kube-client';
import { BACKEND } from './errors.js';
import { readStoredLog } from './log-read.js';
import { directoryLogSink, latestStoredAttempt, type LogSink } from './log-sink.js';
import { type LogLine, type LogOptions, logStream } from './logs.js';
import { DEFAULT_RUNNER_NAME } from './options.js';
import { statusFromPod } from './pod-task.js';
import type { Pod } from './pod.js';
import { PodsApi } from './pods-api.js';
import type { TaskStatus } from './task.js';
import { listTasks, mergedStatus, recordStatus, type TaskListing } from './task-listing.js';
import { decodeRecord, recordName, type RecordObject, type TaskRecord } from './task-record.js';
import { awaitEnded, cancelTask } from './task-requests.js';
import { TaskStore } from './task-store.js';

/** How long {@link TaskView.cancel} waits for the leading runner's confirmation by default. Milliseconds. */
export const DEFAULT_CANCEL_WAIT_MS = 30_000;

/** Options of {@link TaskView.cancel}. */
export interface CancelOptions {
  /** Wait this long, at most, for the leading runner to record the task's end. Milliseconds; 0 does not wait. Default {@link DEFAULT_CANCEL_WAIT_MS}. */
  waitMs?: number;
}

/** What {@link TaskView.cancel} did. */
export interface CancelResult {
  /**
   * `cancelled`: the leading runner ended the task as cancelled (it records
   * that, then deletes a pod the task had); `ended`: it recorded another end,
   * the task having ended first; `already-ended`: the task's record held its
   * end before, nothing was asked; `unconfirmed`: the cancel is asked on the
   * task's record (durable), and no runner recorded an end within the wait —
   * none leads now, or it is slow: the runner that leads next cancels it.
   */
  outcome: 'cancelled' | 'ended' | 'already-ended' | 'unconfirmed';
  /** The task's status: as its record holds it, with its pod's when it has one and has not ended. */
  status: TaskStatus;
}

/** A task record {@link TaskView.list} skipped: it cannot be read (CORRUPT_RECORD, or SCHEMA_MISMATCH from a newer runner). */
export interface UnreadableRecord {
  /** The record's ConfigMap. */
  name: string;
  code: string;
  message: string;
}

/** What {@link openTaskView} takes. */
export interface TaskViewOptions {
  namespace?: string;
  /** The runner's name (`rollcall.dev/runner`). Default `rollcall`. */
  name?: string;
  kubeconfig?: string;
  context?: string;
  kubeConfig?: KubeConfig;
  /** Milliseconds. Default 5000. */
  requestTimeoutMs?: number;
  /**
   * Where the runner keeps its tasks' logs (its `logs` option): `logs` reads a
   * task whose pod is gone from here. A directory (the runner's `logs.dir`) or
   * the runner's sink. Default the directory sink's default, DEFAULT_LOG_DIR.
   */
  logs?: { dir?: string; sink?: LogSink };
  /** The time of the requests' bounds, the cancel's wait and the listing's "now". Default the system clock. */
  clock?: Clock;
}

const SILENT: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

const attemptOfPod = (pod: Pod) => statusFromPod(pod)?.attempt;

/**
 * The tasks of a runner, for tools (`rollcall tasks`): as their task records
 * hold them (one ConfigMap per task), with their pods' statuses while they
 * run; a task with no record (a first-generation runner's) as its pods show
 * it. Read-only but for `cancel`, which asks the leading runner to cancel on
 * the task's record.
 */
export class TaskView {
  private readonly api: PodsApi;
  private readonly sink: LogSink;
  private store?: Promise<TaskStore>;
  private opened?: TaskStore;

  constructor(
    private readonly client: ApiClient,
    readonly namespace: string,
    readonly name: string,
    logs: TaskViewOptions['logs'] = {},
  ) {
    this.api = new PodsApi(client, namespace);
    this.sink = logs.sink ?? directoryLogSink(logs.dir);
  }

  private pods(taskId?: string): Promise<Pod[]> {
    return this.api.list(this.name, taskId);
  }

  /** The runner's records, listed and followed by one informer, opened once (a failed start is not kept). */
  private records(): Promise<TaskStore> {
    this.store ??= (async () => {
      const store = new TaskStore({ client: this.client, namespace: this.namespace, runner: this.name, logger: SILENT });
      this.opened = store;
      try {
        await store.start();
        return store;
      } catch (err) {
        store.close();
        this.store = undefined;
        throw err;
      }
    })();
    return this.store;
  }

  /** The task's record, read once (`get configmaps`); undefined when it has none. CORRUPT_RECORD or SCHEMA_MISMATCH, naming it, when it cannot be read. */
  private async record(taskId: string): Promise<TaskRecord | undefined> {
    const name = recordName(this.name, taskId);
    try {
      return decodeRecord(await this.client.request<RecordObject>({ method: 'GET', path: `/api/v1/namespaces/${this.namespace}/configmaps/${name}`, context: { verb: 'get', resource: 'configmaps', namespace: this.namespace, name } }));
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) return undefined;
      throw err;
    }
  }

  private now(): number {
    return this.client.clock.wallNow().getTime();
  }

  /** The status of a task with a record: the record's, or its attempt's pod's while the record is queued. */
  private statusOf(record: TaskRecord, pods: Pod[]): TaskStatus {
    const recorded = recordStatus(this.name, record, this.now());
    const pod = pods.find((p) => attemptOfPod(p) === recorded.attempt);
    return mergedStatus(recorded, pod && statusFromPod(pod));
  }

  /**
   * Every task id and attempt of the runner, one row each: from its record,
   * its pod, or both (see {@link listTasks}) — so a queued task and one that
   * ended and whose pod is gone are listed too. A record that cannot be read
   * is skipped and named by {@link unreadable}. Reads the pods and the
   * records (`list`, `watch configmaps`; PERMISSION_DENIED without them),
   * writes nothing.
   */
  async list(): Promise<TaskListing[]> {
    const [pods, store] = await Promise.all([this.pods(), this.records()]);
    return listTasks(this.name, pods.map(statusFromPod).filter((s): s is TaskStatus => s !== undefined), store.list(), this.now());
  }

  /** The records the last {@link list} or {@link cancel} could not read, by name: skipped, never thrown. */
  unreadable(): UnreadableRecord[] {
    const found = this.opened?.unreadableRecords() ?? new Map<string, RegistryError>();
    return [...found].map(([name, err]) => ({ name, code: err.code, message: err.message })).sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * The task's status: its record's (with its pod's while it runs); for a
   * task with no record, a first-generation runner's, its latest pod's.
   * Undefined when there is neither. CORRUPT_RECORD or SCHEMA_MISMATCH when
   * its record cannot be read.
   */
  async get(taskId: string): Promise<TaskStatus | undefined> {
    const [record, pods] = await Promise.all([this.record(taskId), this.pods(taskId)]);
    if (record) return this.statusOf(record, pods);
    const statuses = pods.map(statusFromPod).filter((s): s is TaskStatus => s !== undefined);
    return statuses.sort((a, b) => b.attempt - a.attempt)[0];
  }

  /**
   * The log of the task's current attempt (its record's; with no record its
   * latest pod's); with `follow`, until its container exits. From its pod,
   * or, when the pod is gone, from the runner's log sink at that attempt
   * (NOT_FOUND when neither has it).
   */
  async logs(taskId: string, options: LogOptions = {}): Promise<AsyncIterableIterator<LogLine>> {
    const [record, pods] = await Promise.all([this.record(taskId), this.pods(taskId)]);
    const base = { namespace: this.namespace, runner: this.name, taskId };
    const attempt = record ? (record.body.task.attempt ?? 1) : pods.map(attemptOfPod).reduce<number | undefined>((a, b) => (b === undefined || (a !== undefined && a >= b) ? a : b), undefined);
    const pod = attempt === undefined ? undefined : pods.find((p) => attemptOfPod(p) === attempt);
    if (!pod) {
      const stored = record ? ((await this.sink.stat({ ...base, attempt: attempt! })) ? attempt : undefined) : await latestStoredAttempt(this.sink, base);
      if (stored === undefined) {
        const what = record ? `task ${JSON.stringify(taskId)} attempt ${attempt} (${record.body.state}) has no pod left` : `no record and no pod of task ${JSON.stringify(taskId)}`;
        throw new StoreConflictError('NOT_FOUND', `${what} for runner ${this.name} in namespace ${this.namespace}, and no stored log (is the runner's log directory given?)`, { backend: BACKEND });
      }
      return readStoredLog(this.sink, { ...base, attempt: stored }, { ...options, follow: false });
    }
    return logStream({
      client: this.client,
      logger: SILENT,
      namespace: this.namespace,
      podName: () => pod.metadata.name,
      container: options.container ?? pod.spec.containers[0]!.name,
      options,
      // the kubelet ends a following stream when the container exits: a clean end is the end; a dropped one resumes
      ended: () => true,
    });
  }

  /**
   * Asks the leading runner to cancel the task: the `cancel-requested`
   * annotation on its record, with `reason` (durable: a queued task so marked
   * never gets a pod, whichever runner leads next). Then waits, at most
   * `waitMs`, for the record to show the task's end. Says what happened
   * ({@link CancelResult}); a task whose record holds its end is not marked.
   * NOT_FOUND for a task with no record (a first-generation runner's task is
   * cancelled through its runner).
   */
  async cancel(taskId: string, reason = 'cancelled', options: CancelOptions = {}): Promise<CancelResult> {
    const waitMs = options.waitMs ?? DEFAULT_CANCEL_WAIT_MS;
    if (!Number.isFinite(waitMs) || waitMs < 0) throw new InvalidArgumentError(`waitMs ${waitMs} is not valid: milliseconds, 0 or more`, { backend: BACKEND });
    const store = await this.records();
    const unreadable = store.unreadableRecords().get(store.nameOf(taskId));
    if (unreadable) throw unreadable;
    if (!store.get(taskId)) {
      throw new StoreConflictError('NOT_FOUND', `no record of task ${JSON.stringify(taskId)} for runner ${this.name} in namespace ${this.namespace} (a task of a first-generation runner is cancelled with its runner's cancel())`, { backend: BACKEND });
    }
    const asked = await cancelTask(store, taskId, reason);
    if (asked.type === 'ended') return { outcome: 'already-ended', status: this.statusOf(asked.record, []) };
    const ended = waitMs > 0 ? await awaitEnded(store, taskId, waitMs, this.client.clock) : undefined;
    if (ended) return { outcome: ended.body.status?.phase === 'cancelled' ? 'cancelled' : 'ended', status: this.statusOf(ended, []) };
    const now = store.get(taskId) ?? asked.record;
    return { outcome: 'unconfirmed', status: this.statusOf(now, await this.pods(taskId)) };
  }

  close(): void {
    this.opened?.close();
    this.client.close();
  }
}

/** Opens a {@link TaskView} on a runner's records and pods. */
export function openTaskView(options: TaskViewOptions = {}): TaskView {
  const kc = options.kubeConfig ?? loadKubeConfig(options);
  const namespace = resolveNamespace(options.namespace, kc);
  return new TaskView(new ApiClient(kc, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, userAgent(undefined), options.clock), namespace, options.name ?? DEFAULT_RUNNER_NAME, options.logs);
}
