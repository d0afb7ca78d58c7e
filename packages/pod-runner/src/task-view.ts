import type { KubeConfig } from '@kubernetes/client-node';
import { type Clock, DEFAULT_REQUEST_TIMEOUT_MS, hasCode, InvalidArgumentError, StoreConflictError } from '@rollcall/core';
import { awaitRecorded } from './cancel-confirmation.js';
import { ApiClient, loadKubeConfig, resolveNamespace, userAgent } from '@rollcall/kube-client';
import { BACKEND } from './errors.js';
import { readLedger } from './ledger-read.js';
import { readStoredLog } from './log-read.js';
import { directoryLogSink, latestStoredAttempt, type LogSink } from './log-sink.js';
import { type LogLine, type LogOptions, logStream } from './logs.js';
import { DEFAULT_RUNNER_NAME } from './options.js';
import { recordedStatus, statusFromPod } from './pod-task.js';
import { CANCELLED_ANNOTATION, type Pod } from './pod.js';
import { PodsApi } from './pods-api.js';
import type { TaskStatus } from './task.js';
import { listTasks, type TaskListing } from './task-listing.js';

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
   * that, then deletes the pod); `ended`: it recorded another end, the task
   * having ended first; `already-ended`: a runner had recorded its end
   * before, nothing was marked; `unconfirmed`: the pod is marked, and no
   * runner recorded an end within the wait — none leads now, or it is slow:
   * the task may still run, and the runner that leads next cancels it.
   */
  outcome: 'cancelled' | 'ended' | 'already-ended' | 'unconfirmed';
  /** The task's status: as the runner recorded it, else as its pod shows it now. */
  status: TaskStatus;
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

/**
 * The tasks of a runner, for tools (`rollcall tasks`): as their pods show
 * them, and in {@link list} also as the runner's task ledger holds them
 * (queued, and ended with the pod gone). Read-only but for `cancel`, which
 * marks the pod for the runner that leads to end and delete.
 */
export class TaskView {
  private readonly api: PodsApi;
  private readonly sink: LogSink;

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

  /**
   * Every task id and attempt of the runner, one row each: from its pod, its
   * ledger entry, or both (see {@link listTasks}) — so a queued task and one
   * that ended and whose pod is gone are listed too. Reads the pods and the
   * ledger ConfigMap (`get configmaps`; PERMISSION_DENIED without it), writes
   * nothing.
   */
  async list(): Promise<TaskListing[]> {
    const [pods, ledger] = await Promise.all([this.pods(), readLedger(this.client, this.namespace, this.name)]);
    return listTasks(this.name, pods.map(statusFromPod).filter((s): s is TaskStatus => s !== undefined), ledger, this.client.clock.wallNow().getTime());
  }

  /** The task's latest attempt, or undefined. */
  async get(taskId: string): Promise<TaskStatus | undefined> {
    const statuses = (await this.pods(taskId)).map(statusFromPod).filter((s): s is TaskStatus => s !== undefined);
    return statuses.sort((a, b) => b.attempt - a.attempt)[0];
  }

  /**
   * The log of the task's latest attempt; with `follow`, until its container
   * exits. From its pod, or, when the pod is gone, from the runner's log sink
   * (NOT_FOUND when neither has it).
   */
  async logs(taskId: string, options: LogOptions = {}): Promise<AsyncIterableIterator<LogLine>> {
    const status = await this.get(taskId);
    if (!status) {
      const base = { namespace: this.namespace, runner: this.name, taskId };
      const attempt = await latestStoredAttempt(this.sink, base);
      if (attempt === undefined) throw new StoreConflictError('NOT_FOUND', `no pod of task ${JSON.stringify(taskId)} for runner ${this.name} in namespace ${this.namespace}, and no stored log (is the runner's log directory given?)`, { backend: BACKEND });
      return readStoredLog(this.sink, { ...base, attempt }, { ...options, follow: false });
    }
    const pods = await this.pods(taskId);
    const pod = pods.find((p) => p.metadata.name === status.podName)!;
    return logStream({
      client: this.client,
      logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
      namespace: this.namespace,
      podName: () => status.podName,
      container: options.container ?? pod.spec.containers[0]!.name,
      options,
      // the kubelet ends a following stream when the container exits: a clean end is the end; a dropped one resumes
      ended: () => true,
    });
  }

  /**
   * Marks the task's pod cancelled (`rollcall.dev/cancelled`, with `reason`),
   * then waits, at most `waitMs`, for the leading runner's confirmation: the
   * end it records on the pod. Says what happened ({@link CancelResult}); a
   * task whose end a runner recorded before is not marked.
   */
  async cancel(taskId: string, reason = 'cancelled', options: CancelOptions = {}): Promise<CancelResult> {
    const waitMs = options.waitMs ?? DEFAULT_CANCEL_WAIT_MS;
    if (!Number.isFinite(waitMs) || waitMs < 0) throw new InvalidArgumentError(`waitMs ${waitMs} is not valid: milliseconds, 0 or more`, { backend: BACKEND });
    const pod = (await this.pods(taskId)).map((p) => ({ p, s: statusFromPod(p) })).filter((x) => x.s).sort((a, b) => b.s!.attempt - a.s!.attempt)[0]?.p;
    if (!pod) throw new StoreConflictError('NOT_FOUND', `no pod of task ${JSON.stringify(taskId)} for runner ${this.name} in namespace ${this.namespace}`, { backend: BACKEND });
    if (recordedStatus(pod)) return { outcome: 'already-ended', status: statusFromPod(pod)! };
    try {
      await this.api.patchMetadata(pod.metadata.name, { annotations: { [CANCELLED_ANNOTATION]: reason } });
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) throw new StoreConflictError('NOT_FOUND', `task ${taskId}'s pod is gone`, { backend: BACKEND });
      throw err;
    }
    const confirmation = waitMs > 0 ? await awaitRecorded(this.api, this.name, pod, waitMs) : undefined;
    if (confirmation && 'recorded' in confirmation) {
      const status = statusFromPod(confirmation.pod)!;
      return { outcome: status.phase === 'cancelled' ? 'cancelled' : 'ended', status };
    }
    const last = confirmation?.gone ?? pod;
    return { outcome: 'unconfirmed', status: { ...statusFromPod(last)!, ...(confirmation ? { message: `pod ${last.metadata.name} was deleted with no end recorded by a runner` } : {}) } };
  }

  close(): void {
    this.client.close();
  }
}

/** Opens a {@link TaskView} on a runner's pods. */
export function openTaskView(options: TaskViewOptions = {}): TaskView {
  const kc = options.kubeConfig ?? loadKubeConfig(options);
  const namespace = resolveNamespace(options.namespace, kc);
  return new TaskView(new ApiClient(kc, options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS, userAgent(undefined), options.clock), namespace, options.name ?? DEFAULT_RUNNER_NAME, options.logs);
}
