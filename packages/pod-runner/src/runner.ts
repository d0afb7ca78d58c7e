import { type Clock, ClosedError, ConfigurationError, hasCode, InvalidArgumentError, type Logger, StoreConflictError } from '@rollcall/core';
import type { ApiClient } from '@rollcall/kube-client';
import type { RunnerActivityListener, TaskPhase } from '@rollcall/pod-runner-activity';
import { queuedStatus } from './decide.js';
import { BACKEND, isRequeueable } from './errors.js';
import { createLogCapture, type LogCapture } from './log-capture.js';
import { moveLedgerV1 } from './ledger-v1.js';
import type { LogLine, LogOptions } from './logs.js';
import type { ResolvedPodRunnerOptions } from './options.js';
import { buildPod } from './pod-build.js';
import { PodsApi } from './pods-api.js';
import { ObservedApiClient } from './observed-client.js';
import { RunnerActivityReporter } from './runner-activity.js';
import { type EnteredTerm, RunnerElection } from './runner-election.js';
import { RunnerTerm } from './runner-term.js';
import { notifyStatus } from './status-delivery.js';
import { readTaskLog } from './runner-logs.js';
import { nextSubmitSeq } from './submit-order.js';
import { TaskEventHub } from './task-events.js';
import type { TaskRecord } from './task-record.js';
import { cancelTask, submitTask } from './task-requests.js';
import { TaskStore } from './task-store.js';
import { assertTask, copyStatus, isTerminal, type Task, type TaskStatus } from './task.js';
import { type ResolvedTemplate, selectTemplate, templateForSubmit } from './templates.js';
import type { TestHooks } from './test-hooks.js';

/** Filter of {@link PodRunner.list}. */
export interface TaskFilter {
  phase?: TaskPhase | TaskPhase[];
  taskType?: string;
}

/** Options of {@link PodRunner.cancel}. */
export interface CancelOptions {
  /** The time the task's processes get between SIGTERM and SIGKILL. Whole seconds, 0 or more; the kubelet gives at least 2. Default the pod's own `terminationGracePeriodSeconds` (30 unless its template says otherwise). */
  graceSeconds?: number;
  /** Recorded as the task's message. */
  reason?: string;
}

/**
 * Runs tasks as pods: one record per task (a ConfigMap, task-store.ts), one
 * pod per task attempt built from the first template rule that matches. A
 * façade: whichever process receives a submit or a cancel writes it on the
 * record; the elected term (runner-election.ts, runner-term.ts) decides and
 * acts; `result`, `get`, `list` and `logs` read the record cache on every
 * process. See the package README for the lifecycle.
 */
export class PodRunner {
  private readonly hub = new TaskEventHub();
  private readonly activity: RunnerActivityReporter;
  private readonly store: TaskStore;
  private readonly election: RunnerElection<RunnerTerm>;
  private readonly logCapture: LogCapture | undefined;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly ends = new Set<(err: Error) => void>();
  private closed = false;

  /** @internal Use {@link createPodRunner}. */
  constructor(
    private readonly client: ApiClient,
    readonly namespace: string,
    readonly name: string,
    private readonly templates: ResolvedTemplate[],
    private readonly options: ResolvedPodRunnerOptions,
    /** Crash tests' seams (test-hooks.ts); never given in production. */
    private readonly hooks?: TestHooks,
  ) {
    this.logger = options.logger;
    this.clock = options.clock;
    this.activity = new RunnerActivityReporter(this.clock, this.logger);
    if (client instanceof ObservedApiClient) client.report = (activity) => this.activity.emit(activity);
    this.logCapture = createLogCapture(options.logs, { client, logger: this.logger, namespace, runner: name }, options.registry !== undefined);
    const watch = { silenceTimeoutMs: options.watchSilenceTimeoutMs, timeoutSeconds: options.watchTimeoutSeconds };
    this.store = new TaskStore({ client, namespace, runner: name, logger: this.logger, ...watch });
    this.election = new RunnerElection({ client, namespace, runner: name, registry: options.registry, identity: options.identity, clock: this.clock, logger: this.logger, open: (t) => this.openTerm(t) });
  }

  /** Lists the records (following them), then leads (without a registry) or campaigns; without a registry resolves once this process's term is open. */
  async start(): Promise<void> {
    await this.store.start({ upsert: (record, previous) => this.recordSeen(record, previous) });
    await this.election.start();
  }

  /** The elected term: the v1 ledger moved once, then the term's informer and loop. */
  private async openTerm({ term, leads, superseded }: EnteredTerm): Promise<RunnerTerm> {
    const { name, namespace, options } = this;
    await moveLedgerV1({ client: this.client, namespace, runner: name, store: this.store, term, templateOf: (task) => this.ruleOf(task) });
    const opened = new RunnerTerm({
      client: this.client, namespace, runner: name, term, store: this.store, clock: this.clock, logger: this.logger, leads, superseded,
      templates: new Map(this.templates.map((t) => [t.rule.name, { template: t.template, container: t.rule.container }])),
      capacity: options.capacity.total, perTypeCapacity: options.capacity.perType, requeueDelayMs: options.requeueDelayMs,
      settings: { keepFailedPodsMs: options.keepFailedPodsMs, retainDoneMs: options.records.retainDoneMs, expectationTtlMs: 30_000 },
      watchSilenceTimeoutMs: options.watchSilenceTimeoutMs, watchTimeoutSeconds: options.watchTimeoutSeconds,
      deliver: (status) => options.onStatus?.(status),
      publish: (status) => this.publish(status),
      emit: (activity) => this.activity.emit(activity),
      logs: this.logCapture,
      hooks: this.hooks,
    });
    try {
      await opened.start();
    } catch (err) {
      await opened.close();
      throw err;
    }
    return opened;
  }

  private ruleOf(task: Task): { template: string; retry?: ResolvedTemplate['rule']['retry'] } {
    const rule = selectTemplate(this.templates, task)?.rule;
    return { template: rule?.name ?? '', ...(rule?.retry ? { retry: rule.retry } : {}) };
  }

  /** Whether this process leads now: its term is open and, with a registry, the elector holds it at this moment. */
  get isLeader(): boolean {
    return this.election.leads;
  }

  /** Follows what the runner does, for metrics (`@rollcall/metrics`). The listener is first told every task that has not ended. Returns its removal. */
  observe(listener: RunnerActivityListener): () => void {
    return this.activity.observe(listener);
  }

  /** Tasks waiting for a slot on the leader now; 0 on a follower. */
  get queueDepth(): number {
    return this.election.term?.queueDepth ?? 0;
  }

  /** How many times the leader's term listed the pods (1 after start; one more per 410). */
  get podLists(): number {
    return this.election.term?.podLists ?? 0;
  }

  /**
   * Accepts a task: resolves once its record exists (on the leader, after
   * the first sync created its pod or queued it). Idempotent: a known task id
   * (and attempt) answers its status and creates nothing, for as long as its
   * record is kept (`records.retainDoneMs`). Submitting the next attempt of an
   * ended task asks the leader for it on the record. INVALID_ARGUMENT for a
   * malformed task or one no template matches, PAYLOAD_TOO_LARGE for a record
   * over 256 KiB, CONFLICT for another spec under the same attempt (or a pod
   * of that name with another spec), the API server's refusal otherwise.
   */
  async submit(task: Task): Promise<TaskStatus> {
    this.assertOpen();
    assertTask(task);
    const template = templateForSubmit(this.templates, task);
    const submittedAt = this.clock.wallNow().toISOString();
    const full = { ...task, timeouts: { ...this.options.timeouts, ...task.timeouts }, attempt: task.attempt ?? 1 };
    const { specHash } = buildPod({ runner: this.name, namespace: this.namespace, task: full, template: template.template, templateName: template.rule.name, container: template.rule.container, submittedAt });
    const body = { v: 2 as const, state: 'queued' as const, task: full, template: template.rule.name, specHash, submittedAt, seq: nextSubmitSeq(), ...(template.rule.retry ? { retry: template.rule.retry } : {}) };
    const term = this.election.term;
    const synced = term?.synced(task.taskId);
    const answer = await submitTask(this.store, body, undefined, this.hooks);
    // what a submit resolved with, get and cancel on this runner find at once
    await this.store.caughtUp(answer.record);
    if (answer.type !== 'created') return answer.type === 'known' ? this.statusOf(answer.record) : queuedStatus(this.name, body);
    await synced;
    const status = this.get(task.taskId) ?? queuedStatus(this.name, body);
    if (status.reason === 'SpecConflict') throw new StoreConflictError('CONFLICT', status.message ?? `pod ${status.podName} exists with another spec`, { backend: BACKEND });
    if (status.reason === 'CreateFailed' && status.attempt === full.attempt) throw new InvalidArgumentError(status.message ?? `the pod of task ${task.taskId} was refused`, { backend: BACKEND });
    return status;
  }

  /** The task's status, or undefined for an id this runner has no record of. */
  get(taskId: string): TaskStatus | undefined {
    const record = this.store.get(taskId);
    return record && this.statusOf(record);
  }

  list(filter: TaskFilter = {}): TaskStatus[] {
    const phases = filter.phase === undefined ? undefined : new Set(Array.isArray(filter.phase) ? filter.phase : [filter.phase]);
    return this.store
      .inSubmitOrder()
      .map((r) => this.statusOf(r))
      .filter((s) => (!phases || phases.has(s.phase)) && (!filter.taskType || s.taskType === filter.taskType));
  }

  /** Every status change from now on, or one task's (starting with its status now, ending after its terminal one). Ends when the runner closes. */
  events(taskId?: string): AsyncIterableIterator<TaskStatus> {
    return this.hub.subscribe(taskId, taskId === undefined ? undefined : this.require(taskId));
  }

  /** Resolves with the task's terminal status once its record holds it (on the leader, once handed to `onStatus`); NOT_FOUND for an unknown id, CLOSED if the runner closes first. */
  async result(taskId: string): Promise<TaskStatus> {
    const now = this.require(taskId);
    const ended = isTerminal(now) ? now : await this.untilEnded(taskId);
    // on the leader, once handed to onStatus too (as a follower's result comes after the leader's)
    await this.election.term?.handedOver(taskId);
    return ended;
  }

  /**
   * The task's log, line by line with the container's timestamps: the captured
   * copy once the task ended (or its pod is gone), else the pod's. With
   * `follow`, until the task ends. NOT_FOUND for an unknown task, or one with
   * neither a pod nor a stored log.
   */
  logs(taskId: string, options: LogOptions = {}): AsyncIterableIterator<LogLine> {
    const status = this.require(taskId);
    const rule = this.templates.find((t) => t.rule.name === status.template);
    const pod = this.election.term?.podsOf(taskId).find((p) => p.metadata.name === status.podName);
    return readTaskLog({
      client: this.client, logger: this.logger, namespace: this.namespace, capture: this.logCapture, status, pod, options,
      ruleContainer: rule?.rule.container ?? rule?.template.spec?.containers[0]?.name ?? '',
      current: () => this.get(taskId) ?? status,
      changes: () => this.hub.subscribe(taskId, this.get(taskId) ?? status),
    });
  }

  /**
   * Cancels a task, on any runner: durable on its record (`cancel-requested`);
   * resolves once the leader has ended it `cancelled` (a queued task never gets
   * a pod; a running one's pod is deleted). A task already ended is returned
   * unchanged. NOT_FOUND for an unknown id.
   */
  async cancel(taskId: string, options: CancelOptions = {}): Promise<TaskStatus> {
    this.assertOpen();
    const now = this.require(taskId);
    if (options.graceSeconds !== undefined && (!Number.isInteger(options.graceSeconds) || options.graceSeconds < 0)) {
      throw new InvalidArgumentError(`graceSeconds ${options.graceSeconds} is not valid: a whole number of seconds, 0 or more`, { backend: BACKEND });
    }
    if (isTerminal(now)) return now;
    const answer = await cancelTask(this.store, taskId, options.reason ?? 'cancelled', options.graceSeconds, this.hooks);
    if (answer.type === 'ended') return this.statusOf(answer.record);
    return this.untilEnded(taskId);
  }

  /** Stops following records and pods and ends every `events()` iterator; pods keep running, and a runner started again takes them over. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const end of this.ends) end(new ClosedError('the pod runner was closed', { backend: BACKEND }));
    this.ends.clear();
    await this.election.close();
    this.store.close();
    this.hub.close();
    await this.logCapture?.stopAll();
    this.activity.close();
    this.client.close();
  }

  /** Dry-runs a pod of every template, so a broken one fails here, naming its rule, and not at the first task. */
  async validateTemplates(): Promise<void> {
    const api = new PodsApi(this.client, this.namespace);
    for (const resolved of this.templates) {
      const task = { taskId: `dry-run-${resolved.index}`, taskType: resolved.rule.taskTypes?.[0] ?? 'dry-run', tags: resolved.rule.tags, timeouts: this.options.timeouts };
      const { pod } = buildPod({ runner: this.name, namespace: this.namespace, task, template: resolved.template, templateName: resolved.rule.name, container: resolved.rule.container, submittedAt: this.clock.wallNow().toISOString() });
      try {
        await api.dryRunCreate(pod);
      } catch (err) {
        // a quota refusal (or a 429) comes after the pod passed validation: the template is sound, the namespace full now
        if (hasCode(err, 'ALREADY_EXISTS') || isRequeueable(err)) continue;
        if (hasCode(err, 'INVALID_ARGUMENT')) {
          throw new ConfigurationError(`templates[${resolved.index}] (${resolved.rule.name}): the API server rejects its pod: ${(err as Error).message}`, { key: `templates[${resolved.index}]`, backend: BACKEND, cause: err });
        }
        throw err;
      }
    }
  }

  /** A status change: to `events()`, the activity stream, and `onStatus` once for a change on the way (a terminal one is delivered by the term until acknowledged). */
  private publish(status: TaskStatus): void {
    this.hub.publish(status);
    this.activity.status(status);
    if (!isTerminal(status)) notifyStatus(this.options.onStatus, status, this.logger);
  }

  /** A record's change as the informer shows it: on a follower, an end is told to `events()` and the activity stream (the leader's term tells its own). */
  private recordSeen(record: TaskRecord, previous: TaskRecord | undefined): void {
    if (this.isLeader || record.body.state === 'queued' || (previous && previous.body.state !== 'queued' && previous.body.task.attempt === record.body.task.attempt)) return;
    const status = this.statusOf(record);
    this.hub.publish(status);
    this.activity.status(status, true);
  }

  /** The record's status: its end once stored, else what the leader's term last saw of its pods, else queued. */
  private statusOf(record: TaskRecord): TaskStatus {
    const body = record.body;
    if (body.state !== 'queued' && body.status) return copyStatus(body.status);
    const seen = this.election.term?.status(body.task.taskId);
    return copyStatus(seen && seen.attempt === (body.task.attempt ?? 1) ? seen : queuedStatus(this.name, body));
  }

  private require(taskId: string): TaskStatus {
    const status = this.get(taskId);
    if (!status) throw new StoreConflictError('NOT_FOUND', `no task ${JSON.stringify(taskId)} in pod runner ${this.name}`, { backend: BACKEND });
    return status;
  }

  /** Resolves with the task's terminal status once its record holds it; CLOSED when the runner closes, NOT_FOUND when its record is deleted first. */
  private untilEnded(taskId: string): Promise<TaskStatus> {
    return new Promise((resolve, reject) => {
      const name = this.store.nameOf(taskId);
      const settle = (done: () => void) => {
        unsubscribe();
        this.ends.delete(fail);
        done();
      };
      const fail = (err: Error) => settle(() => reject(err));
      const unsubscribe = this.store.subscribe({
        upsert: (record) => void (record.name === name && record.body.state !== 'queued' && settle(() => resolve(this.statusOf(record)))),
        delete: (record) => void (record.name === name && fail(new StoreConflictError('NOT_FOUND', `task ${JSON.stringify(taskId)}'s record was deleted`, { backend: BACKEND }))),
      });
      this.ends.add(fail);
      const now = this.store.get(taskId);
      if (now && now.body.state !== 'queued') settle(() => resolve(this.statusOf(now)));
    });
  }

  private assertOpen(): void {
    if (this.closed) throw new ClosedError('the pod runner was closed', { backend: BACKEND });
  }
}
