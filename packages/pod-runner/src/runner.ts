import { type Clock, ClosedError, ConfigurationError, hasCode, InvalidArgumentError, type Logger, StoreConflictError } from '@rollcall/core';
import { DelayQueue } from '@rollcall/core/spi';
import { type ApiClient, ResourceInformer } from '@rollcall/kube-client';
import { LEDGER_FORMAT, type QueuedEntry, tombstone, tombstoneStatus, type LedgerEntry } from './ledger-format.js';
import { StatusDelivery } from './status-delivery.js';
import { TaskLedger } from './task-ledger.js';
import { nextSubmitSeq, restoreOrder } from './submit-order.js';
import { Capacity } from './capacity.js';
import { BACKEND, isRequeueable, notLeader, requeueReason } from './errors.js';
import { createTaskPod } from './executor.js';
import { LeaderGate } from './leader-gate.js';
import { createLogCapture, type LogCapture } from './log-capture.js';
import { type LogLine, type LogOptions, logStream } from './logs.js';
import type { ResolvedPodRunnerOptions } from './options.js';
import { buildPod } from './pod-build.js';
import { lostByDeletion, taskContainerName } from './pod-status.js';
import { PodReleaser } from './pod-releaser.js';
import { recordedStatus, taskOfPod } from './pod-task.js';
import { FENCING_TOKEN_ANNOTATION, type Pod, SPEC_HASH_ANNOTATION, RUNNER_LABEL, TASK_ID_LABEL } from './pod.js';
import { PodsApi } from './pods-api.js';
import { ObservedApiClient } from './observed-client.js';
import type { RunnerActivityListener } from '@rollcall/pod-runner-activity';
import { RunnerActivityReporter } from './runner-activity.js';
import { type FinishChange, pendingTimedOut, queueTimedOut, reconcile, runTimedOut, unknownTimedOut } from './reconcile.js';
import { nextAttempt } from './retry-policy.js';
import { TaskEventHub } from './task-events.js';
import { TaskQueue } from './task-queue.js';
import { changedStatus, copyStatus, newTaskState, type TaskState } from './task-state.js';
import { TaskTimers } from './task-timers.js';
import { type AttemptOutcome, assertTask, isTerminal, type Task, type TaskStatus, type TaskTimeouts } from './task.js';
import type { PendingCause, TaskPhase } from '@rollcall/pod-runner-activity';
import { type ResolvedTemplate, selectTemplate, templateForSubmit } from './templates.js';

/** Filter of {@link PodRunner.list}. */
export interface TaskFilter {
  phase?: TaskPhase | TaskPhase[];
  taskType?: string;
}

/** Options of {@link PodRunner.cancel}. */
export interface CancelOptions {
  /** The time the task's processes get between SIGTERM and SIGKILL. Whole seconds, 0 or more; the kubelet gives at least 2. Default the pod's own `terminationGracePeriodSeconds` (30 unless its template says otherwise). */
  graceSeconds?: number;
  /** Recorded as the task's message and on the pod. */
  reason?: string;
}

/**
 * Runs tasks as pods: one pod per task attempt, built from the first template
 * rule that matches, followed through one watch on the runner's label, its status
 * read from the pod. See the package README for the lifecycle.
 *
 * A facade: the waiting tasks are a {@link TaskQueue}, what to do about a pod
 * is the pure {@link reconcile}, creating a pod is the executor's
 * ({@link createTaskPod}), letting a finished one go the {@link PodReleaser}'s,
 * who may act the {@link LeaderGate}'s, and every request goes through
 * {@link PodsApi}. This class holds the tasks and applies the decisions.
 */
export class PodRunner {
  private readonly tasks = new Map<string, TaskState>();
  private readonly queue: TaskQueue<TaskState>;
  private readonly hub = new TaskEventHub();
  private readonly capacity: Capacity;
  private readonly timeouts: TaskTimeouts;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly api: PodsApi;
  private readonly gate: LeaderGate;
  private readonly releaser: PodReleaser;
  private readonly timers: TaskTimers;
  private readonly logCapture: LogCapture | undefined;
  private readonly activity: RunnerActivityReporter;
  private readonly ledger: TaskLedger;
  private readonly delivery: StatusDelivery;
  /** The delivery's pauses and acknowledgements, looked at when due. */
  private readonly redeliveries: DelayQueue<string>;
  /** The ledger is read for this term (the leader's, or a runner's without a registry): until then nothing is created and a submit waits. */
  private ledgerLoaded: Promise<void> | undefined;
  private ledgerReady = false;
  /** The pods are listed: a queued task whose pod exists is known not to need one. */
  private listed = false;
  private closed = false;
  private informer: ResourceInformer<Pod> | undefined;

  /** @internal Use {@link createPodRunner}. */
  constructor(
    private readonly client: ApiClient,
    readonly namespace: string,
    readonly name: string,
    private readonly templates: ResolvedTemplate[],
    private readonly options: ResolvedPodRunnerOptions,
  ) {
    this.logger = options.logger;
    this.clock = options.clock;
    this.capacity = new Capacity({ total: options.capacity.total, perType: { ...options.capacity.perType } });
    this.timeouts = options.timeouts;
    this.api = new PodsApi(client, namespace, (verb) => this.gate.fence(verb));
    this.queue = new TaskQueue({ clock: this.clock, requeueDelayMs: options.requeueDelayMs, onResume: () => this.pump() });
    this.gate = new LeaderGate(options.registry, `pod-runner-${name}`, options.identity);
    this.timers = new TaskTimers(this.clock);
    this.activity = new RunnerActivityReporter(this.clock, this.logger);
    if (client instanceof ObservedApiClient) client.report = (activity) => this.activity.emit(activity);
    this.logCapture = createLogCapture(options.logs, { client, logger: this.logger, namespace, runner: name }, options.registry !== undefined);
    this.ledger = new TaskLedger({
      client,
      namespace,
      runner: name,
      clock: this.clock,
      logger: this.logger,
      retainDoneMs: options.ledger.retainDoneMs,
      maxDone: options.ledger.maxDone,
      // a ledger write is a write like a pod's: not sent by a runner whose term may be over
      fence: (verb) => this.gate.fence(verb),
    });
    this.redeliveries = new DelayQueue({ clock: this.clock, run: (taskId) => this.deliveryDue(taskId) });
    this.delivery = new StatusDelivery({ onStatus: options.onStatus, clock: this.clock, logger: this.logger, schedule: (taskId, delayMs) => this.redeliveries.schedule(taskId, delayMs) });
    this.releaser = new PodReleaser({
      api: this.api,
      clock: this.clock,
      logger: this.logger,
      keepFailedPodsMs: options.keepFailedPodsMs,
      latest: (podName) => this.informer?.get(podName),
      closed: () => this.closed,
      untilLogged: (state) => this.logCapture?.untilLogged(state.status, state.pod) ?? Promise.resolve(),
      untilRecorded: (state) => state.stored ?? Promise.resolve(true),
    });
  }

  /** Lists this runner's pods (re-attaching to every one), then follows them through one watch. */
  async start(): Promise<void> {
    this.informer = new ResourceInformer<Pod>(
      {
        client: this.client,
        logger: this.logger,
        path: this.api.path,
        labelSelector: `${RUNNER_LABEL}=${this.name}`,
        resource: 'pods',
        namespace: this.namespace,
        silenceTimeoutMs: this.options.watchSilenceTimeoutMs,
        timeoutSeconds: this.options.watchTimeoutSeconds,
      },
      {
        upsert: (pod) => this.onPod(pod),
        delete: (pod) => this.onPodGone(pod),
        interrupted: (err) => {
          this.activity.emit({ type: 'watchEnded', code: err.code });
          this.logger.debug({ err }, '[rollcall] [pod-runner] pod watch interrupted; resuming');
        },
      },
    );
    // without a registry this runner leads from the start: the ledger first, so the pods listed meet the tasks it holds
    if (!this.options.registry) await this.loadLedger();
    await this.informer.start();
    this.listed = true;
    this.campaign();
    this.pump();
    // what ended while no runner was up is stored and handed to onStatus before start resolves
    await this.ledger.idle();
  }

  /**
   * Reads the ledger for this term: queued tasks (and retries in their backoff)
   * back in the queue, terminal statuses not acknowledged delivered again,
   * tombstones kept for resubmits. A task this runner holds already keeps its
   * state, unless the ledger says it ended.
   */
  private loadLedger(): Promise<void> {
    this.ledgerLoaded ??= (async () => {
      const entries = await this.ledger.load();
      for (const [taskId, entry] of restoreOrder(entries)) this.restore(taskId, entry);
      this.ledgerReady = true;
    })();
    return this.ledgerLoaded;
  }

  private restore(taskId: string, stored: LedgerEntry): void {
    const known = this.tasks.get(taskId);
    if (stored.state !== 'queued') {
      const status = stored.state === 'finished' ? stored.status : tombstoneStatus(stored);
      if (known && known.status.attempt > status.attempt) return;
      if (known && !isTerminal(known.status)) this.endQuietly(known, status);
      if (stored.state === 'finished') {
        if (!known) this.tasks.set(taskId, { ...newTaskState(status, { ...this.timeouts }, stored.specHash), stored: Promise.resolve(true) });
        this.delivery.deliver(status);
      }
      return;
    }
    if (known) return;
    const template = selectTemplate(this.templates, stored.task);
    const built = template && buildPod({ runner: this.name, namespace: this.namespace, task: stored.task, template: template.template, templateName: template.rule.name, container: template.rule.container, submittedAt: stored.submittedAt });
    const attempt = stored.task.attempt ?? 1;
    const status: TaskStatus = { taskId, taskType: stored.task.taskType, tags: { ...stored.task.tags }, attempt, phase: 'queued', podName: built?.pod.metadata.name ?? `${this.name}-${taskId}-${attempt}`, template: template?.rule.name ?? '', submittedAt: stored.submittedAt };
    if (stored.previousAttempts) status.previousAttempts = stored.previousAttempts;
    const entry = newTaskState(status, { ...this.timeouts, ...stored.task.timeouts }, built?.specHash, template && { task: stored.task, template });
    this.tasks.set(taskId, entry);
    if (!template) return this.finish(entry, { phase: 'failed', reason: 'CreateFailed', message: `no template rule matches task ${taskId} of type ${stored.task.taskType} any more` });
    const wait = (stored.retryAt ?? 0) - this.clock.wallNow().getTime();
    if (wait > 0) {
      entry.status = { ...status, reason: 'RetryBackoff', message: `attempt ${attempt} in ${wait} ms (restored from the ledger)` };
      this.timers.armRetry(entry, wait, () => this.retryDue(entry));
    } else {
      this.enqueue(entry, stored.retryAt ?? Date.parse(stored.submittedAt));
    }
  }

  /** A task this runner held ends as another runner (or the ledger) recorded it: no report, it was reported there. */
  private endQuietly(entry: TaskState, status: TaskStatus): void {
    this.queue.remove(entry);
    this.timers.clear(entry);
    this.freeSlot(entry);
    entry.status = { ...entry.status, ...status };
    for (const waiter of entry.waiters.splice(0)) waiter.resolve(copyStatus(entry.status));
  }

  /** A delivery asked to be looked at: an acknowledgement to store, or a pause over. */
  private deliveryDue(taskId: string): void {
    const status = this.delivery.status(taskId);
    if (!status) return;
    const state = this.delivery.state(taskId);
    if (state === 'none') return this.delivery.deliver(status);
    if (state !== 'acked') return;
    this.delivery.forget(taskId);
    this.acknowledged(status);
  }

  /** `onStatus` acknowledged a terminal status: its tombstone replaces it in the ledger (by the leader; another runner delivers it again). */
  private acknowledged(status: TaskStatus): void {
    if (this.closed || !this.isLeader) return;
    const entry = this.tasks.get(status.taskId);
    // a newer attempt submitted meanwhile owns the entry now
    if (entry && entry.status.attempt !== status.attempt) return;
    // not stored (fenced, closed): the next leader delivers the status again
    this.ledger.write(status.taskId, tombstone(status, entry?.specHash, this.clock.wallNow().getTime())).catch(() => {});
  }

  /** Whether this runner acts on pods: always without a registry, while it leads the runner election with one. */
  get isLeader(): boolean {
    return this.gate.isLeader;
  }

  /**
   * With a registry: campaign for `pod-runner-<name>`. Elected, the runner
   * re-attaches to every pod its watch holds (reporting what ended meanwhile,
   * resuming timers from the pods' timestamps) and creates what is queued;
   * deposed, it stops acting at once and keeps only watching.
   */
  private campaign(): void {
    this.gate.start({
      elected: (fencingToken) => {
        this.logger.info({ fencingToken }, '[rollcall] [pod-runner] leading the runner election; reading the task ledger and re-attaching to the pods');
        void this.takeOver();
      },
      lost: (reason) => {
        this.logger.warn({ reason }, '[rollcall] [pod-runner] lost the runner election; no longer acting on pods');
        this.ledgerLoaded = undefined;
        this.ledgerReady = false;
        for (const state of this.tasks.values()) this.timers.clearPodTimers(state);
        void this.logCapture?.stopAll();
      },
      fenced: (verb) => {
        this.activity.emit({ type: 'fenced', verb });
        this.logger.warn({ verb }, '[rollcall] [pod-runner] a write held back: this runner\'s term may be over');
      },
    });
  }

  /**
   * Follows what the runner does — status changes, the time pods spend in each
   * pending cause, requeues, retries, watch restarts, API requests — for
   * metrics (`@rollcall/metrics`' `registerPodRunnerMetrics`). The listener is
   * first told every task that has not ended. Returns the function that removes it.
   */
  observe(listener: RunnerActivityListener): () => void {
    return this.activity.observe(listener);
  }

  /** Tasks waiting in the queue for capacity (or a quota pause) now; not those in a retry's backoff. */
  get queueDepth(): number {
    return this.queue.length;
  }

  /** A new term: the ledger read (again after a failure, while this runner leads), then every pod re-attached and the queue tried. */
  private async takeOver(): Promise<void> {
    while (this.isLeader && !this.closed) {
      try {
        await this.loadLedger();
        break;
      } catch (err) {
        this.ledgerLoaded = undefined;
        if (hasCode(err, 'SCHEMA_MISMATCH', 'CORRUPT_RECORD')) return this.logger.error({ err }, '[rollcall] [pod-runner] cannot read the task ledger; this runner leads but acts on nothing');
        this.logger.warn({ err }, '[rollcall] [pod-runner] could not read the task ledger; trying again');
        await new Promise<void>((resolve) => this.clock.setTimeout(resolve, 1000));
      }
    }
    if (!this.isLeader || this.closed) return;
    for (const pod of this.informer?.list() ?? []) this.onPod(pod);
    this.pump();
  }

  /** How many times the pod collection was listed (1 after start; one more per 410). */
  get podLists(): number {
    return this.informer?.lists ?? 0;
  }

  /**
   * Accepts a task: resolves once it is durable (in the task ledger), its pod
   * created if capacity allows, else waiting in the queue. Idempotent: submitting
   * a known task id (and attempt) again returns its status and creates nothing —
   * a cancelled task stays cancelled, and a finished one is remembered by its
   * tombstone (see `ledger`) after the runner restarts. Submitting the next
   * attempt of a task acknowledges the previous attempt's terminal status.
   * Rejects with INVALID_ARGUMENT for a malformed task or one no template
   * matches, PAYLOAD_TOO_LARGE when the ledger is full, CONFLICT when a pod of
   * that name exists with another spec, and the API server's refusal (e.g.
   * PERMISSION_DENIED) when storing the task or creating its pod failed,
   * LEASE_LOST when this runner's term ended as it was storing the task (the
   * ledger write was fenced: submit again, to whoever leads); a rejected
   * submit leaves nothing behind.
   */
  async submit(task: Task): Promise<TaskStatus> {
    this.assertOpen();
    assertTask(task);
    const attempt = task.attempt ?? 1;
    const template = templateForSubmit(this.templates, task);
    const submittedAt = this.clock.wallNow().toISOString();
    const timeouts = { ...this.timeouts, ...task.timeouts };
    const built = buildPod({ runner: this.name, namespace: this.namespace, task: { ...task, timeouts }, template: template.template, templateName: template.rule.name, container: template.rule.container, submittedAt });
    if (this.isLeader) await this.loadLedger();
    const existing = this.tasks.get(task.taskId);
    const stored = this.ledger.get(task.taskId);
    if (!existing && stored?.state === 'done' && stored.status.attempt >= attempt) {
      if (stored.status.attempt === attempt && stored.specHash && stored.specHash !== built.specHash) {
        throw new StoreConflictError('CONFLICT', `task ${task.taskId} attempt ${attempt} was submitted before with another spec`, { backend: BACKEND });
      }
      return tombstoneStatus(stored);
    }
    if (existing && existing.status.attempt >= attempt) {
      if (existing.status.attempt === attempt && existing.specHash && existing.specHash !== built.specHash) {
        throw new StoreConflictError('CONFLICT', `task ${task.taskId} attempt ${attempt} was submitted before with another spec`, { backend: BACKEND });
      }
      return copyStatus(existing.status);
    }
    if (existing && !isTerminal(existing.status)) throw new StoreConflictError('CONFLICT', `task ${task.taskId} attempt ${existing.status.attempt} is still ${existing.status.phase}; a new attempt waits until it ends`, { backend: BACKEND });
    const status: TaskStatus = { taskId: task.taskId, taskType: task.taskType, tags: { ...task.tags }, attempt, phase: 'queued', podName: built.pod.metadata.name, template: template.rule.name, submittedAt };
    const entry = newTaskState(status, timeouts, built.specHash, { task: { ...task, timeouts }, template });
    const record: QueuedEntry = { v: LEDGER_FORMAT, state: 'queued', task: { ...task, timeouts, attempt }, submittedAt, seq: nextSubmitSeq(), specHash: built.specHash };
    if (this.isLeader) this.ledger.assertRoom(task.taskId, record);
    this.tasks.set(task.taskId, entry);
    try {
      const found = await this.store(task.taskId, record, stored);
      // a follower found the task ended already (the leader ran it): answered from the ledger
      if (found && found.state !== 'queued' && found.status.attempt >= attempt) {
        this.endQuietly(entry, found.state === 'finished' ? found.status : tombstoneStatus(found));
        return copyStatus(entry.status);
      }
    } catch (err) {
      if (this.tasks.get(task.taskId) === entry) {
        if (existing) this.tasks.set(task.taskId, existing);
        else this.tasks.delete(task.taskId);
      }
      throw err;
    }
    // cancelled while it was being stored
    if (isTerminal(entry.status)) return copyStatus(entry.status);
    if (existing) this.delivery.forget(task.taskId);
    this.publish(entry.status);
    this.enqueue(entry, Date.parse(submittedAt));
    if (entry.creating) await entry.creating;
    if (entry.createError) throw entry.createError;
    return copyStatus(entry.status);
  }

  /**
   * Stores a submitted task: the leader writes its entry (a failure puts back
   * what the ledger held); a follower adds it only where the ledger has none,
   * answering with the entry it found.
   */
  private async store(taskId: string, record: QueuedEntry, before: LedgerEntry | undefined): Promise<LedgerEntry | undefined> {
    if (!this.isLeader) return this.ledger.addIfAbsent(taskId, record);
    try {
      await this.ledger.write(taskId, record, true);
      return undefined;
    } catch (err) {
      // not stored either (fenced, closed): the ledger holds what it held, the runner reads it again when it leads
      this.ledger.write(taskId, before).catch(() => {});
      throw err;
    }
  }

  /** The task's status, or undefined for an id this runner does not know. */
  get(taskId: string): TaskStatus | undefined {
    const entry = this.tasks.get(taskId);
    return entry && copyStatus(entry.status);
  }

  list(filter: TaskFilter = {}): TaskStatus[] {
    const phases = filter.phase === undefined ? undefined : new Set(Array.isArray(filter.phase) ? filter.phase : [filter.phase]);
    return [...this.tasks.values()]
      .map((e) => e.status)
      .filter((s) => (!phases || phases.has(s.phase)) && (!filter.taskType || s.taskType === filter.taskType))
      .map(copyStatus);
  }

  /** Every status change from now on, or one task's (starting with its status now, ending after its terminal one). Ends when the runner closes. */
  events(taskId?: string): AsyncIterableIterator<TaskStatus> {
    if (taskId !== undefined) {
      const entry = this.requireEntry(taskId);
      return this.hub.subscribe(taskId, entry.status);
    }
    return this.hub.subscribe(undefined, undefined);
  }

  /** Resolves with the task's terminal status once it is stored in the ledger; NOT_FOUND for an unknown id, CLOSED if the runner closes first. */
  async result(taskId: string): Promise<TaskStatus> {
    const entry = this.requireEntry(taskId);
    if (isTerminal(entry.status)) {
      await entry.stored;
      return copyStatus(entry.status);
    }
    return new Promise((resolve, reject) => entry.waiters.push({ resolve, reject }));
  }

  /**
   * The task's log, line by line with the container's timestamps. With
   * `follow`, until the task ends; a stream that drops (the API server, the
   * node, the network) is reopened from its last line, with no line repeated.
   * NOT_FOUND for an unknown task or one whose pod is gone.
   */
  logs(taskId: string, options: LogOptions = {}): AsyncIterableIterator<LogLine> {
    const entry = this.requireEntry(taskId);
    // a container that has not started has no log yet: a follower waits for it (the API server would refuse)
    const notStarted = entry.status.phase === 'queued' || entry.status.phase === 'pending';
    const started = options.follow && notStarted ? this.untilStarted(taskId, entry.status) : undefined;
    const container = this.taskContainer(entry);
    const fromPod = () =>
      logStream({ client: this.client, logger: this.logger, namespace: this.namespace, podName: () => entry.status.podName, container: options.container ?? container, options, started, ended: () => isTerminal(entry.status) });
    // the captured copy, which outlives the pod: followed, or read once the task ended or its pod is gone;
    // a read of a running task is the kubelet's (what it has now, not what the capture stored so far)
    const captured = this.logCapture && (options.container === undefined || options.container === container);
    if (captured && (options.follow || !entry.pod || isTerminal(entry.status))) {
      return this.logCapture!.read(entry.status, options, started, () => isTerminal(entry.status), entry.pod ? fromPod : undefined);
    }
    if (!entry.pod && !(options.follow && notStarted)) {
      throw new StoreConflictError('NOT_FOUND', `task ${taskId} has no pod${isTerminal(entry.status) ? ' any more' : ' yet'}: no log to read`, { backend: BACKEND });
    }
    return fromPod();
  }

  /** The container whose log is the task's (and is captured): found by name (see taskContainerName). */
  private taskContainer(entry: TaskState): string {
    return (entry.pod && taskContainerName(entry.pod)) ?? entry.spec?.template.rule.container ?? entry.spec?.template.template.spec!.containers[0]!.name ?? '';
  }

  /** Resolves once the task's status leaves queued and pending (its container started, or it ended). */
  private async untilStarted(taskId: string, current: TaskStatus): Promise<void> {
    for await (const status of this.hub.subscribe(taskId, current)) if (status.phase !== 'queued' && status.phase !== 'pending') return;
  }

  /**
   * Cancels a task: a queued one never gets a pod; a pod is deleted with the
   * grace period. The task is `cancelled` at once and stays so: a completion
   * seen later does not change it, and submitting the id again creates nothing.
   * NOT_FOUND for an unknown id; a task already ended is returned unchanged.
   */
  async cancel(taskId: string, options: CancelOptions = {}): Promise<TaskStatus> {
    this.assertOpen();
    const entry = this.requireEntry(taskId);
    if (options.graceSeconds !== undefined && (!Number.isInteger(options.graceSeconds) || options.graceSeconds < 0)) {
      throw new InvalidArgumentError(`graceSeconds ${options.graceSeconds} is not valid: a whole number of seconds, 0 or more`, { backend: BACKEND });
    }
    if (entry.creating) await entry.creating;
    if (isTerminal(entry.status)) return copyStatus(entry.status);
    // a task in a retry's backoff has no pod either: cancelling it is the runner's own business
    const queued = this.queue.remove(entry) || entry.timers.retry !== undefined;
    if (!queued && !this.isLeader) throw notLeader(this.name);
    entry.release.graceSeconds = options.graceSeconds;
    this.finish(entry, { phase: 'cancelled', reason: 'Cancelled', message: options.reason ?? 'cancelled' });
    // resolved once the cancel is durable: a runner started later never creates the task
    if (entry.stored) await entry.stored;
    if (entry.pod) await this.releaser.release(entry);
    return copyStatus(entry.status);
  }

  /** Stops following pods and ends every `events()` iterator; pods keep running, and a runner started again re-attaches to them. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.delivery.close();
    this.redeliveries.close();
    this.informer?.close();
    await this.gate.close();
    this.queue.close();
    for (const entry of this.tasks.values()) {
      this.timers.clear(entry);
      entry.release.deleteTimer?.cancel();
      for (const waiter of entry.waiters.splice(0)) waiter.reject(new ClosedError('the pod runner was closed', { backend: BACKEND }));
    }
    this.hub.close();
    await Promise.allSettled([...this.tasks.values()].map((e) => e.release.inFlight));
    // what is being written goes out once more; what cannot be written is the next runner's (the pods are kept for it)
    await this.ledger.close();
    await this.logCapture?.stopAll();
    this.activity.close();
    this.client.close();
  }

  // --- capacity and creation ---

  /** Puts a task in the queue (at submit, or when a retry's backoff ends), its queue bound counted from `since` (wall-clock ms). */
  private enqueue(entry: TaskState, since: number): void {
    this.queue.push(entry);
    if (entry.timeouts.queue !== undefined) this.timers.armQueue(entry, since + entry.timeouts.queue, () => this.queueTimedOut(entry));
    this.pump();
  }

  private takeSlot(entry: TaskState): void {
    entry.holdsSlot = true;
    this.capacity.take(entry.status.taskType);
  }

  /** Frees the task's slot; whether it held one. */
  private freeSlot(entry: TaskState): boolean {
    if (!entry.holdsSlot) return false;
    entry.holdsSlot = false;
    this.capacity.free(entry.status.taskType);
    return true;
  }

  /** Creates pods for queued tasks, in order, while there is room and no quota refusal is being waited out. */
  private pump(): void {
    if (this.closed || !this.isLeader || !this.ledgerReady || !this.listed || this.queue.paused) return;
    for (const entry of this.queue.snapshot()) {
      if (this.capacity.full) break;
      if (!this.capacity.hasRoom(entry.status.taskType)) continue;
      this.queue.remove(entry);
      this.takeSlot(entry);
      entry.creating = this.create(entry)
        .catch((err: unknown) => {
          entry.createError = err;
          this.logger.warn({ err, task: entry.status.taskId }, '[rollcall] [pod-runner] could not create the pod of a task');
        })
        .finally(() => (entry.creating = undefined));
    }
  }

  /** Builds the task's pod (with this term's fencing token), has the executor create it, and applies the outcome. */
  private async create(entry: TaskState): Promise<void> {
    const { task, template } = entry.spec!;
    const { pod } = buildPod({
      runner: this.name,
      namespace: this.namespace,
      task,
      template: template.template,
      templateName: template.rule.name,
      container: template.rule.container,
      submittedAt: entry.status.submittedAt,
      fencingToken: this.gate.fencingToken,
    });
    const result = await createTaskPod(this.api, pod, entry.specHash, () => isTerminal(entry.status));
    switch (result.outcome) {
      case 'created':
      case 'adopted':
        this.timers.clearQueue(entry);
        if (result.outcome === 'created') this.queue.resetBackoff();
        else this.logger.info({ pod: result.pod.metadata.name }, '[rollcall] [pod-runner] adopted the existing pod of a task');
        if (entry.status.phase === 'queued') this.setStatus(entry, { phase: 'pending', pendingCause: 'scheduling' });
        // The watch may have brought newer states of the pod before this answer: never go back to the answered one.
        this.onPod(this.informer?.get(result.pod.metadata.name) ?? result.pod);
        return;
      case 'ended':
        return;
      case 'fenced':
        // this runner's term may be over: the task waits at the head of the queue for whoever leads (no quota pause)
        this.freeSlot(entry);
        this.queue.requeue(entry);
        this.queue.endPause();
        return;
      case 'requeue': {
        this.freeSlot(entry);
        const retryInMs = this.queue.requeue(entry);
        this.activity.emit({ type: 'requeue', taskType: entry.status.taskType, reason: requeueReason(result.error) });
        this.setStatus(entry, { phase: 'queued', message: `requeued: ${result.error.message}` });
        this.logger.info({ task: entry.status.taskId, retryInMs }, '[rollcall] [pod-runner] pod creation refused for quota or rate, or not answered and not landed; requeued');
        return;
      }
      case 'failed':
        this.finish(entry, { phase: 'failed', reason: result.reason, message: (result.error as Error).message });
        throw result.error;
    }
  }

  // --- following pods ---

  /** A pod's latest state from the watch (or a create's answer): the leader reconciles, a follower only follows. */
  private onPod(pod: Pod): void {
    if (this.closed) return;
    this.gate.see(pod.metadata.annotations?.[FENCING_TOKEN_ANNOTATION]);
    if (!this.isLeader) return this.follow(pod);
    const taskId = pod.metadata.labels?.[TASK_ID_LABEL];
    if (!taskId) return;
    const known = this.tasks.get(taskId);
    const entry = known ?? this.reattach(pod);
    if (!entry) return;
    const decision = reconcile(entry, pod, this.clock.wallNow());
    if (decision.action === 'ignore') return;
    // A pod of another attempt: an earlier one still held by our finalizer is let go.
    if (decision.action === 'release-other') return void this.releaser.releasePod(pod, undefined);
    entry.pod = pod;
    const attempt = entry.status.attempt;
    this.logCapture?.observe(entry.status, pod, this.taskContainer(entry), decision.action !== 'release', () => isTerminal(entry.status) || entry.status.attempt !== attempt);
    if (decision.action === 'release') return void this.releaser.release(entry);
    // queued here, but its pod exists (made by the runner that led before): follow it, never create it again
    this.queue.remove(entry);
    if (!entry.holdsSlot) this.takeSlot(entry);
    switch (decision.action) {
      case 'finish':
        this.finish(entry, decision.change);
        void this.releaser.release(entry);
        return;
      case 'run':
        this.timers.clearPending(entry);
        this.timers.clearUnknown(entry);
        this.setStatus(entry, decision.change);
        if (decision.runDeadline !== undefined) this.timers.armRun(entry, decision.runDeadline, () => this.runTimedOut(entry));
        return;
      case 'unknown':
        // a pod whose node went silent is not "starting": no pending timer can delete a long-running task
        this.timers.clearPending(entry);
        this.setStatus(entry, decision.change);
        this.timers.armUnknown(entry, decision.unknownDeadline, () => this.unknownTimedOut(entry));
        return;
      case 'wait':
        this.timers.clearUnknown(entry);
        this.setStatus(entry, decision.change);
        if (decision.pendingDeadline) this.timers.armPending(entry, decision.pendingDeadline.cause, decision.pendingDeadline.deadline, (cause) => void this.pendingTimedOut(entry, cause));
        else this.timers.clearPending(entry);
        return;
    }
  }

  /**
   * A follower does not act; whoever leads next re-attaches from the watch's
   * cache. It only learns what the leader does with the tasks it was given too:
   * a task whose pod the leader made leaves this runner's queue (it is never
   * created twice), and a status the leader recorded ends the task here too,
   * quietly (the leader reported it), so a resubmit answers it.
   */
  private follow(pod: Pod): void {
    const taskId = pod.metadata.labels?.[TASK_ID_LABEL];
    if (!taskId) return;
    let entry = this.tasks.get(taskId);
    const recorded = recordedStatus(pod);
    if (!entry && recorded) entry = this.knowFromPod(pod, taskId);
    if (!entry || entry.status.podName !== pod.metadata.name) return;
    this.queue.remove(entry);
    if (recorded && !isTerminal(entry.status)) {
      entry.status = { ...entry.status, ...recorded };
      this.activity.status(entry.status, true);
      for (const waiter of entry.waiters.splice(0)) waiter.resolve(copyStatus(entry.status));
    }
  }

  private onPodGone(pod: Pod): void {
    if (!this.isLeader) return;
    const entry = this.tasks.get(pod.metadata.labels?.[TASK_ID_LABEL] ?? '');
    if (!entry || entry.status.podName !== pod.metadata.name) return;
    entry.pod = undefined;
    entry.release.deleteTimer?.cancel();
    this.logCapture?.gone(entry.status);
    if (!isTerminal(entry.status)) {
      // gone without the runner seeing it end (its last state may say why: evicted, preempted, its node lost)
      this.finish(entry, lostByDeletion(pod));
    }
  }

  /** A pod this runner does not know (it restarted, or took over): the task, from the pod's annotation. */
  private reattach(pod: Pod): TaskState | undefined {
    const task = taskOfPod(pod);
    if (!task) {
      this.logger.warn({ pod: pod.metadata.name }, '[rollcall] [pod-runner] a pod with the runner label has no readable task annotation; left alone');
      return undefined;
    }
    const entry = this.knowFromPod(pod, task.record.taskId)!;
    this.logger.info({ task: task.record.taskId, pod: pod.metadata.name, recorded: recordedStatus(pod) !== undefined }, '[rollcall] [pod-runner] re-attached to a task from its pod');
    return entry;
  }

  /**
   * Keeps a task known only from its pod under `taskId`: the task from the pod's
   * annotation, its status the one recorded on the pod (reported once already,
   * only cleaned up) or else followed from what the pod shows. Undefined when the
   * annotation is unreadable.
   */
  private knowFromPod(pod: Pod, taskId: string): TaskState | undefined {
    const task = taskOfPod(pod);
    if (!task) return undefined;
    const entry = newTaskState({ ...task.status, ...recordedStatus(pod) }, { ...this.timeouts, ...task.record.timeouts }, pod.metadata.annotations?.[SPEC_HASH_ANNOTATION]);
    this.tasks.set(taskId, entry);
    this.activity.status(entry.status, true);
    return entry;
  }

  // --- timeouts ---

  // A timer of a runner whose term may be over ends nothing (a process resumed from a pause runs its
  // overdue timers before it hears it lost): whoever leads resumes the timer from the pod's timestamps.

  private async pendingTimedOut(entry: TaskState, cause: PendingCause): Promise<void> {
    if (isTerminal(entry.status) || this.closed || !this.isLeader) return;
    const podEvents = await this.api.recentEvents(entry.status.podName, this.logger);
    if (isTerminal(entry.status)) return;
    this.finish(entry, pendingTimedOut(entry.status, cause, podEvents));
    await this.releaser.release(entry);
  }

  private runTimedOut(entry: TaskState): void {
    if (isTerminal(entry.status) || this.closed || !this.isLeader) return;
    this.finish(entry, runTimedOut(entry.timeouts));
    void this.releaser.release(entry);
  }

  private unknownTimedOut(entry: TaskState): void {
    if (isTerminal(entry.status) || this.closed || !this.isLeader || entry.status.phase !== 'unknown') return;
    this.finish(entry, unknownTimedOut(entry.status, entry.timeouts));
    void this.releaser.release(entry);
  }

  /** The queue bound passed: a task never admitted (no pod created) fails; one whose create is in flight is judged when it answers. */
  private queueTimedOut(entry: TaskState): void {
    if (isTerminal(entry.status) || this.closed) return;
    if (entry.creating) return void entry.creating.then(() => this.queueTimedOut(entry));
    if (entry.status.phase !== 'queued' || !this.queue.remove(entry)) return;
    this.finish(entry, queueTimedOut(entry.status, entry.timeouts));
  }

  // --- ending ---

  private setStatus(entry: TaskState, change: Partial<TaskStatus>): void {
    const next = changedStatus(entry.status, change);
    if (!next) return;
    entry.status = next;
    this.publish(entry.status);
  }

  /** Records a terminal status once, frees the task's slot, wakes `result()` and the queue — unless the template's retry policy retries this outcome. */
  private finish(entry: TaskState, change: FinishChange): void {
    if (isTerminal(entry.status)) return;
    const next = this.closed || !entry.spec ? { retry: false as const } : nextAttempt(entry.spec.template.rule.retry, { ...entry.status, ...change }, entry.status.previousAttempts?.length ?? 0);
    if (next.retry) return this.retry(entry, change, next.delayMs);
    this.timers.clear(entry);
    this.setStatus(entry, { pendingCause: undefined, finishedAt: this.clock.wallNow().toISOString(), ...change });
    this.record(entry);
    const freed = entry.holdsSlot;
    this.freeSlot(entry);
    // result() answers once the status is stored (and handed to onStatus)
    const waiters = entry.waiters.splice(0);
    const ended = copyStatus(entry.status);
    void entry.stored!.then(() => {
      for (const waiter of waiters) waiter.resolve(copyStatus(ended));
    });
    // a pod gone frees quota too: try the queue now rather than after the requeue pause
    if (freed) this.queue.endPause();
    this.pump();
  }

  /**
   * Stores the terminal status in the ledger, then delivers it to `onStatus`
   * until acknowledged; the pod is let go only once it is stored (`stored`).
   */
  private record(entry: TaskState): void {
    const status = copyStatus(entry.status);
    if (this.closed || !this.isLeader) return void (entry.stored = Promise.resolve(false));
    entry.stored = this.ledger.write(status.taskId, { v: LEDGER_FORMAT, state: 'finished', status, ...(entry.specHash ? { specHash: entry.specHash } : {}) }).then(
      () => (this.delivery.deliver(status), true),
      () => false,
    );
  }

  /**
   * The attempt ended in an outcome the policy retries: its pod goes (the
   * finalizer off, deleted), the task waits `delayMs` as `queued` with reason
   * `RetryBackoff` and the ended attempt in `previousAttempts`, then queues its
   * next attempt: a new pod, `<runner>-<id>-<attempt+1>`.
   */
  private retry(entry: TaskState, change: FinishChange, delayMs: number): void {
    const ended = { ...entry.status, finishedAt: this.clock.wallNow().toISOString(), ...change };
    const outcome = Object.fromEntries(
      Object.entries({ attempt: ended.attempt, podName: ended.podName, phase: ended.phase, reason: ended.reason, message: ended.message, exitCode: ended.exitCode, finishedAt: ended.finishedAt }).filter(([, v]) => v !== undefined),
    ) as unknown as AttemptOutcome;
    this.timers.clear(entry);
    const oldPod = entry.pod;
    entry.pod = undefined;
    entry.release = {};
    entry.createError = undefined;
    if (this.freeSlot(entry)) this.queue.endPause();
    // the ended attempt's pod goes now; a later state of it is let go as another attempt's (reconcile's release-other)
    const spec = entry.spec!;
    spec.task = { ...spec.task, attempt: ended.attempt + 1 };
    const built = buildPod({ runner: this.name, namespace: this.namespace, task: spec.task, template: spec.template.template, templateName: spec.template.rule.name, container: spec.template.rule.container, submittedAt: entry.status.submittedAt });
    entry.specHash = built.specHash;
    // the next attempt and its backoff are durable before the ended attempt's pod goes
    const next: QueuedEntry = { v: LEDGER_FORMAT, state: 'queued', task: spec.task, submittedAt: entry.status.submittedAt, seq: nextSubmitSeq(), specHash: built.specHash, previousAttempts: [...(entry.status.previousAttempts ?? []), outcome], retryAt: this.clock.wallNow().getTime() + delayMs };
    const stored = this.closed || !this.isLeader ? Promise.resolve(false) : this.ledger.write(entry.status.taskId, next).then(() => true, () => false);
    if (oldPod) {
      void stored.then(async (ok) => {
        if (!ok) return;
        await (this.logCapture?.untilLogged(ended, oldPod) ?? Promise.resolve());
        await this.releaser.releasePod(oldPod, undefined);
      });
    }
    const exit = outcome.exitCode === undefined ? '' : `, exit code ${outcome.exitCode}`;
    this.setStatus(entry, {
      attempt: ended.attempt + 1,
      podName: built.pod.metadata.name,
      phase: 'queued',
      reason: 'RetryBackoff',
      message: `attempt ${outcome.attempt} ended ${outcome.phase} (${outcome.reason ?? 'no reason'}${exit}); attempt ${ended.attempt + 1} in ${delayMs} ms`,
      previousAttempts: [...(entry.status.previousAttempts ?? []), outcome],
      pendingCause: undefined, ungatedAt: undefined,
      exitCode: undefined,
      terminationMessage: undefined,
      result: undefined,
      podEvents: undefined,
      startedAt: undefined,
      finishedAt: undefined,
    });
    this.activity.emit({ type: 'retry', taskType: entry.status.taskType, reason: outcome.reason ?? outcome.phase });
    this.logger.info({ task: entry.status.taskId, attempt: entry.status.attempt, delayMs, after: outcome.reason }, '[rollcall] [pod-runner] retrying a task by its template\'s retry policy');
    this.pump();
    this.timers.armRetry(entry, delayMs, () => this.retryDue(entry));
  }

  /** A retry's backoff ended: its next attempt joins the queue. */
  private retryDue(entry: TaskState): void {
    if (isTerminal(entry.status) || this.closed) return;
    this.setStatus(entry, { reason: undefined, message: undefined });
    this.enqueue(entry, this.clock.wallNow().getTime());
  }

  // --- helpers ---

  /** A status change to `events()` now, and to `onStatus`: once on the way, a terminal one when stored (record). */
  private publish(status: TaskStatus): void {
    this.hub.publish(status);
    this.activity.status(status);
    if (!isTerminal(status)) this.delivery.notify(status);
  }

  private requireEntry(taskId: string): TaskState {
    const entry = this.tasks.get(taskId);
    if (!entry) throw new StoreConflictError('NOT_FOUND', `no task ${JSON.stringify(taskId)} in pod runner ${this.name}`, { backend: BACKEND });
    return entry;
  }

  private assertOpen(): void {
    if (this.closed) throw new ClosedError('the pod runner was closed', { backend: BACKEND });
  }

  /** Dry-runs a pod of every template, so a broken one fails here, naming its rule, and not at the first task. */
  async validateTemplates(): Promise<void> {
    for (const resolved of this.templates) {
      const { pod } = buildPod({
        runner: this.name,
        namespace: this.namespace,
        task: { taskId: `dry-run-${resolved.index}`, taskType: resolved.rule.taskTypes?.[0] ?? 'dry-run', tags: resolved.rule.tags, timeouts: this.timeouts },
        template: resolved.template,
        templateName: resolved.rule.name,
        container: resolved.rule.container,
        submittedAt: this.clock.wallNow().toISOString(),
      });
      try {
        await this.api.dryRunCreate(pod);
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
}
