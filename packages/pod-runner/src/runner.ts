import { ClosedError, ConfigurationError, hasCode, InvalidArgumentError, type Leadership, type Logger, RegistryError, silentLogger, StoreConflictError } from '@rollcall/core';
import { type ApiClient, type RequestContext, ResourceInformer } from '@rollcall/kubernetes/api';
import { Capacity } from './capacity.js';
import { BACKEND, isRequeueable, notLeader } from './errors.js';
import { DEFAULT_TOTAL_CAPACITY, type PodRunnerOptions } from './options.js';
import { type LogLine, type LogOptions, logStream } from './logs.js';
import { buildPod } from './pod-build.js';
import { recordedStatus, taskOfPod } from './pod-task.js';
import { FATAL_WAITING, type PodReading, readPod } from './pod-status.js';
import { CANCELLED_ANNOTATION, FINALIZER, type Pod, RECORDED_ANNOTATION, RUNNER_LABEL, SPEC_HASH_ANNOTATION, TASK_ID_LABEL } from './pod.js';
import { TaskEventHub } from './task-events.js';
import { assertTask, DEFAULT_TIMEOUTS, isTerminal, type PendingCause, type Task, type TaskPhase, type TaskStatus, type TaskTimeouts } from './task.js';
import { type ResolvedTemplate, selectTemplate } from './templates.js';

const MAX_REQUEUE_MS = 30_000;
/** Pause before letting go of a finished pod again after a failed attempt. Milliseconds. */
const RELEASE_RETRY_MS = 1000;

/** Filter of {@link PodRunner.list}. */
export interface TaskFilter {
  phase?: TaskPhase | TaskPhase[];
  taskType?: string;
}

/** Options of {@link PodRunner.cancel}. */
export interface CancelOptions {
  /** The pod's termination grace period. Seconds. Default the pod's own (30 unless its template says otherwise). */
  graceSeconds?: number;
  /** Recorded as the task's message and on the pod. */
  reason?: string;
}

interface Entry {
  status: TaskStatus;
  /** The task as submitted; undefined for a task re-attached from its pod. */
  task?: Task;
  template?: ResolvedTemplate;
  timeouts: TaskTimeouts;
  specHash?: string;
  /** The pod's last state seen through the watch. */
  pod?: Pod;
  holdsSlot: boolean;
  /** The create in flight; it never rejects: a refusal lands in `createError`. */
  creating?: Promise<void>;
  createError?: unknown;
  pendingTimer?: { cause: PendingCause; deadline: number; timer: NodeJS.Timeout };
  runTimer?: NodeJS.Timeout;
  deleteTimer?: NodeJS.Timeout;
  cancelGraceSeconds?: number;
  /** A release (finalizer off, then delete) is in flight. */
  releasing?: Promise<void>;
  /** The pod changed while a release was in flight: release again from its new state. */
  releaseAgain?: boolean;
  deleteRequested?: boolean;
  waiters: { resolve(status: TaskStatus): void; reject(err: Error): void }[];
}

function copy(status: TaskStatus): TaskStatus {
  return structuredClone(status);
}

/**
 * Runs tasks as pods: one pod per task attempt, built from the first template
 * rule that matches, followed through one watch on the runner's label, its status
 * read from the pod. See the package README for the lifecycle.
 */
export class PodRunner {
  private readonly tasks = new Map<string, Entry>();
  private readonly queue: Entry[] = [];
  private readonly hub = new TaskEventHub();
  private readonly capacity: Capacity;
  private readonly timeouts: TaskTimeouts;
  private readonly logger: Logger;
  private requeueDelayMs: number;
  private requeueTimer: NodeJS.Timeout | undefined;
  private requeueUntil = 0;
  private closed = false;
  private informer: ResourceInformer<Pod> | undefined;
  private leadership: Leadership | undefined;
  private fencingToken: number | undefined;

  /** @internal Use {@link createPodRunner}. */
  constructor(
    private readonly client: ApiClient,
    readonly namespace: string,
    readonly name: string,
    private readonly templates: ResolvedTemplate[],
    private readonly options: PodRunnerOptions,
  ) {
    this.logger = options.logger ?? silentLogger;
    this.capacity = new Capacity({ total: options.capacity?.total ?? DEFAULT_TOTAL_CAPACITY, perType: { ...options.capacity?.perType } });
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    this.requeueDelayMs = options.requeueDelayMs ?? 1000;
  }

  /** Lists this runner's pods (re-attaching to every one), then follows them through one watch. */
  async start(): Promise<void> {
    this.informer = new ResourceInformer<Pod>(
      {
        client: this.client,
        logger: this.logger,
        path: this.podsPath(),
        labelSelector: `${RUNNER_LABEL}=${this.name}`,
        resource: 'pods',
        namespace: this.namespace,
        silenceTimeoutMs: this.options.watchSilenceTimeoutMs ?? 90_000,
        timeoutSeconds: this.options.watchTimeoutSeconds ?? 300,
      },
      {
        upsert: (pod) => this.onPod(pod),
        delete: (pod) => this.onPodGone(pod),
        interrupted: (err) => this.logger.debug({ err }, '[rollcall] [pod-runner] pod watch interrupted; resuming'),
      },
    );
    await this.informer.start();
    if (this.options.registry) this.campaign();
  }

  /** Whether this runner acts on pods: always without a registry, while it leads the runner election with one. */
  get isLeader(): boolean {
    return !this.options.registry || this.fencingToken !== undefined;
  }

  /**
   * With a registry: campaign for `pod-runner-<name>`. Elected, the runner
   * re-attaches to every pod its watch holds (reporting what ended meanwhile,
   * resuming timers from the pods' timestamps) and creates what is queued;
   * deposed, it stops acting at once and keeps only watching.
   */
  private campaign(): void {
    const leadership = this.options.registry!.campaign(`pod-runner-${this.name}`, this.options.identity);
    this.leadership = leadership;
    leadership.on('elected', ({ fencingToken }) => {
      if (this.closed) return;
      this.fencingToken = fencingToken;
      this.logger.info({ fencingToken }, '[rollcall] [pod-runner] leading the runner election; re-attaching to the pods');
      for (const pod of this.informer?.list() ?? []) this.onPod(pod);
      this.pump();
    });
    leadership.on('lost', ({ reason }) => {
      this.fencingToken = undefined;
      this.logger.warn({ reason }, '[rollcall] [pod-runner] lost the runner election; no longer acting on pods');
      for (const entry of this.tasks.values()) this.clearTimers(entry);
    });
  }

  /** How many times the pod collection was listed (1 after start; one more per 410). */
  get podLists(): number {
    return this.informer?.lists ?? 0;
  }

  /**
   * Accepts a task: its pod is created now if capacity allows, else it waits in
   * the queue. Idempotent: submitting a known task id (and attempt) again
   * returns its status and creates nothing — a cancelled task stays cancelled.
   * Rejects with INVALID_ARGUMENT for a malformed task or one no template
   * matches, CONFLICT when a pod of that name exists with another spec, and the
   * API server's refusal (e.g. PERMISSION_DENIED) when creation failed.
   */
  async submit(task: Task): Promise<TaskStatus> {
    this.assertOpen();
    assertTask(task);
    const attempt = task.attempt ?? 1;
    const template = selectTemplate(this.templates, task);
    if (!template) throw new InvalidArgumentError(`no template rule matches task ${task.taskId} of type ${task.taskType}, and there is no default rule`, { backend: BACKEND });
    const submittedAt = new Date().toISOString();
    const timeouts = { ...this.timeouts, ...task.timeouts };
    const built = buildPod({ runner: this.name, namespace: this.namespace, task: { ...task, timeouts }, template: template.template, templateName: template.rule.name, submittedAt });
    const existing = this.tasks.get(task.taskId);
    if (existing && existing.status.attempt >= attempt) {
      if (existing.status.attempt === attempt && existing.specHash && existing.specHash !== built.specHash) {
        throw new StoreConflictError('CONFLICT', `task ${task.taskId} attempt ${attempt} was submitted before with another spec`, { backend: BACKEND });
      }
      return copy(existing.status);
    }
    if (existing && !isTerminal(existing.status)) throw new StoreConflictError('CONFLICT', `task ${task.taskId} attempt ${existing.status.attempt} is still ${existing.status.phase}; a new attempt waits until it ends`, { backend: BACKEND });
    const entry: Entry = {
      status: {
        taskId: task.taskId,
        taskType: task.taskType,
        tags: { ...task.tags },
        attempt,
        phase: 'queued',
        podName: built.pod.metadata.name,
        template: template.rule.name,
        submittedAt,
      },
      task: { ...task, timeouts },
      template,
      timeouts,
      specHash: built.specHash,
      holdsSlot: false,
      waiters: [],
    };
    this.tasks.set(task.taskId, entry);
    this.queue.push(entry);
    this.publish(entry.status);
    this.pump();
    if (entry.creating) await entry.creating;
    if (entry.createError) throw entry.createError;
    return copy(entry.status);
  }

  /** The task's status, or undefined for an id this runner does not know. */
  get(taskId: string): TaskStatus | undefined {
    const entry = this.tasks.get(taskId);
    return entry && copy(entry.status);
  }

  list(filter: TaskFilter = {}): TaskStatus[] {
    const phases = filter.phase === undefined ? undefined : new Set(Array.isArray(filter.phase) ? filter.phase : [filter.phase]);
    return [...this.tasks.values()]
      .map((e) => e.status)
      .filter((s) => (!phases || phases.has(s.phase)) && (!filter.taskType || s.taskType === filter.taskType))
      .map(copy);
  }

  /** Every status change from now on, or one task's (starting with its status now, ending after its terminal one). Ends when the runner closes. */
  events(taskId?: string): AsyncIterableIterator<TaskStatus> {
    if (taskId !== undefined) {
      const entry = this.requireEntry(taskId);
      return this.hub.subscribe(taskId, entry.status);
    }
    return this.hub.subscribe(undefined, undefined);
  }

  /** Resolves with the task's terminal status; NOT_FOUND for an unknown id, CLOSED if the runner closes first. */
  async result(taskId: string): Promise<TaskStatus> {
    const entry = this.requireEntry(taskId);
    if (isTerminal(entry.status)) return copy(entry.status);
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
    if (!entry.pod && !(options.follow && notStarted)) {
      throw new StoreConflictError('NOT_FOUND', `task ${taskId} has no pod${isTerminal(entry.status) ? ' any more' : ' yet'}: no log to read`, { backend: BACKEND });
    }
    return logStream({
      client: this.client,
      logger: this.logger,
      namespace: this.namespace,
      podName: () => entry.status.podName,
      container: options.container ?? entry.pod?.spec.containers[0]!.name ?? entry.template!.template.spec!.containers[0]!.name,
      options,
      started: options.follow && notStarted ? this.untilStarted(taskId, entry.status) : undefined,
      ended: () => isTerminal(entry.status),
    });
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
    if (isTerminal(entry.status)) return copy(entry.status);
    const queued = this.queue.indexOf(entry);
    if (queued < 0 && !this.isLeader) throw notLeader(this.name);
    if (queued >= 0) this.queue.splice(queued, 1);
    entry.cancelGraceSeconds = options.graceSeconds;
    this.finish(entry, { phase: 'cancelled', reason: 'Cancelled', message: options.reason ?? 'cancelled' });
    if (entry.pod) await this.release(entry);
    return copy(entry.status);
  }

  /** Stops following pods and ends every `events()` iterator; pods keep running, and a runner started again re-attaches to them. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.informer?.close();
    await this.leadership?.resign();
    clearTimeout(this.requeueTimer);
    for (const entry of this.tasks.values()) {
      this.clearTimers(entry);
      clearTimeout(entry.deleteTimer);
      for (const waiter of entry.waiters.splice(0)) waiter.reject(new ClosedError('the pod runner was closed', { backend: BACKEND }));
    }
    this.hub.close();
    await Promise.allSettled([...this.tasks.values()].map((e) => e.releasing));
    this.client.close();
  }

  // --- capacity and creation ---

  private takeSlot(entry: Entry): void {
    entry.holdsSlot = true;
    this.capacity.take(entry.status.taskType);
  }

  private freeSlot(entry: Entry): void {
    if (!entry.holdsSlot) return;
    entry.holdsSlot = false;
    this.capacity.free(entry.status.taskType);
  }

  /** Creates pods for queued tasks, in order, while there is room and no quota refusal is being waited out. */
  private pump(): void {
    if (this.closed || !this.isLeader || Date.now() < this.requeueUntil) return;
    for (const entry of [...this.queue]) {
      if (this.capacity.full) break;
      if (!this.capacity.hasRoom(entry.status.taskType)) continue;
      this.queue.splice(this.queue.indexOf(entry), 1);
      this.takeSlot(entry);
      entry.creating = this.create(entry)
        .catch((err: unknown) => {
          entry.createError = err;
          this.logger.warn({ err, task: entry.status.taskId }, '[rollcall] [pod-runner] could not create the pod of a task');
        })
        .finally(() => (entry.creating = undefined));
    }
  }

  private async create(entry: Entry): Promise<void> {
    const { pod } = buildPod({
      runner: this.name,
      namespace: this.namespace,
      task: entry.task!,
      template: entry.template!.template,
      templateName: entry.template!.rule.name,
      submittedAt: entry.status.submittedAt,
      fencingToken: this.fencingToken,
    });
    try {
      const created = await this.client.request<Pod>({ method: 'POST', path: this.podsPath(), body: pod, context: this.context('create', pod.metadata.name) });
      this.requeueDelayMs = this.options.requeueDelayMs ?? 1000;
      if (entry.status.phase === 'queued') this.setStatus(entry, { phase: 'pending', pendingCause: 'scheduling' });
      // The watch may have brought newer states of the pod before this answer: never go back to the created one.
      this.onPod(this.informer?.get(created.metadata.name) ?? created);
    } catch (err) {
      if (isTerminal(entry.status)) return;
      if (hasCode(err, 'ALREADY_EXISTS')) return this.adoptExisting(entry);
      if (isRequeueable(err)) return this.requeue(entry, err as RegistryError);
      this.finish(entry, { phase: 'failed', reason: 'CreateFailed', message: (err as Error).message });
      throw err;
    }
  }

  /** A pod of this name exists (a retry after a lost answer, or another runner's): adopt it only when it is the same pod. */
  private async adoptExisting(entry: Entry): Promise<void> {
    const name = entry.status.podName;
    const existing = await this.client.request<Pod>({ method: 'GET', path: `${this.podsPath()}/${name}`, context: this.context('get', name) });
    if (existing.metadata.annotations?.[SPEC_HASH_ANNOTATION] === entry.specHash) {
      this.logger.info({ pod: name }, '[rollcall] [pod-runner] adopted the existing pod of a task');
      if (entry.status.phase === 'queued') this.setStatus(entry, { phase: 'pending', pendingCause: 'scheduling' });
      this.onPod(this.informer?.get(name) ?? existing);
      return;
    }
    const err = new StoreConflictError('CONFLICT', `pod ${name} exists in namespace ${this.namespace} with another spec (spec hash ${existing.metadata.annotations?.[SPEC_HASH_ANNOTATION] ?? 'none'}, this task's ${entry.specHash}); it was not adopted`, { backend: BACKEND });
    this.finish(entry, { phase: 'failed', reason: 'SpecConflict', message: err.message });
    throw err;
  }

  private requeue(entry: Entry, err: RegistryError): void {
    this.freeSlot(entry);
    this.queue.unshift(entry);
    this.setStatus(entry, { phase: 'queued', message: `requeued: ${err.message}` });
    this.requeueUntil = Date.now() + this.requeueDelayMs;
    this.logger.info({ task: entry.status.taskId, retryInMs: this.requeueDelayMs }, '[rollcall] [pod-runner] pod creation refused for quota or rate; requeued');
    clearTimeout(this.requeueTimer);
    this.requeueTimer = setTimeout(() => {
      this.requeueUntil = 0;
      this.pump();
    }, this.requeueDelayMs);
    this.requeueDelayMs = Math.min(this.requeueDelayMs * 2, MAX_REQUEUE_MS);
  }

  // --- following pods ---

  private onPod(pod: Pod): void {
    if (this.closed) return;
    if (!this.isLeader) return this.follow(pod);
    const taskId = pod.metadata.labels?.[TASK_ID_LABEL];
    if (!taskId) return;
    let entry = this.tasks.get(taskId);
    if (entry && entry.status.podName !== pod.metadata.name) {
      // A pod of another attempt: an earlier one still held by our finalizer is let go.
      if (pod.metadata.finalizers?.includes(FINALIZER) && readPod(pod).phase !== 'pending' && readPod(pod).phase !== 'running') void this.releasePod(pod, undefined);
      return;
    }
    entry ??= this.reattach(pod);
    if (!entry) return;
    entry.pod = pod;
    if (isTerminal(entry.status)) {
      void this.release(entry);
      return;
    }
    // queued here, but its pod exists (made by the runner that led before): follow it, never create it again
    const queued = this.queue.indexOf(entry);
    if (queued >= 0) this.queue.splice(queued, 1);
    if (!entry.holdsSlot) this.takeSlot(entry);
    const cancelled = pod.metadata.annotations?.[CANCELLED_ANNOTATION];
    if (cancelled !== undefined) {
      this.finish(entry, { phase: 'cancelled', reason: 'Cancelled', message: cancelled });
      void this.release(entry);
      return;
    }
    const reading = readPod(pod);
    if (reading.phase !== 'pending' && reading.phase !== 'running') {
      const { phase, ...rest } = reading;
      this.finish(entry, { phase, ...rest });
      void this.release(entry);
      return;
    }
    if (pod.metadata.deletionTimestamp) {
      this.finish(entry, { phase: 'lost', reason: 'Deleted', message: `pod ${pod.metadata.name} was deleted before it finished` });
      void this.release(entry);
      return;
    }
    if (reading.phase === 'running') {
      this.clearPendingTimer(entry);
      this.setStatus(entry, { phase: 'running', pendingCause: undefined, reason: undefined, message: undefined, startedAt: reading.startedAt });
      this.armRunTimer(entry, reading.startedAt);
      return;
    }
    if (reading.reason && FATAL_WAITING.has(reading.reason)) {
      this.finish(entry, { phase: 'failed', reason: reading.reason, message: reading.message });
      void this.release(entry);
      return;
    }
    this.setStatus(entry, { phase: 'pending', pendingCause: reading.cause, reason: reading.reason, message: reading.message });
    this.armPendingTimer(entry, reading, pod);
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
    if (!entry && recorded) {
      const task = taskOfPod(pod);
      if (!task) return;
      entry = { status: task.status, timeouts: { ...this.timeouts, ...task.record.timeouts }, specHash: pod.metadata.annotations?.[SPEC_HASH_ANNOTATION], holdsSlot: false, waiters: [] };
      this.tasks.set(taskId, entry);
    }
    if (!entry || entry.status.podName !== pod.metadata.name) return;
    const queued = this.queue.indexOf(entry);
    if (queued >= 0) this.queue.splice(queued, 1);
    if (recorded && !isTerminal(entry.status)) {
      entry.status = { ...entry.status, ...recorded };
      for (const waiter of entry.waiters.splice(0)) waiter.resolve(copy(entry.status));
    }
  }

  private onPodGone(pod: Pod): void {
    if (!this.isLeader) return;
    const entry = this.tasks.get(pod.metadata.labels?.[TASK_ID_LABEL] ?? '');
    if (!entry || entry.status.podName !== pod.metadata.name) return;
    entry.pod = undefined;
    clearTimeout(entry.deleteTimer);
    if (!isTerminal(entry.status)) this.finish(entry, { phase: 'lost', reason: 'Deleted', message: `pod ${pod.metadata.name} was deleted before it finished` });
  }

  /** A pod this runner does not know (it restarted, or took over): the task, from the pod's annotation. */
  private reattach(pod: Pod): Entry | undefined {
    const task = taskOfPod(pod);
    if (!task) {
      this.logger.warn({ pod: pod.metadata.name }, '[rollcall] [pod-runner] a pod with the runner label has no readable task annotation; left alone');
      return undefined;
    }
    // recorded: reported once already, only cleaned up; else followed from what the pod shows
    const recorded = recordedStatus(pod);
    const entry: Entry = { status: { ...task.status, ...recorded }, timeouts: { ...this.timeouts, ...task.record.timeouts }, specHash: pod.metadata.annotations?.[SPEC_HASH_ANNOTATION], holdsSlot: false, waiters: [] };
    this.tasks.set(task.record.taskId, entry);
    this.logger.info({ task: task.record.taskId, pod: pod.metadata.name, recorded: Boolean(recorded) }, '[rollcall] [pod-runner] re-attached to a task from its pod');
    return entry;
  }

  // --- timers ---

  private armPendingTimer(entry: Entry, reading: Extract<PodReading, { phase: 'pending' }>, pod: Pod): void {
    const created = Date.parse(pod.metadata.creationTimestamp ?? entry.status.submittedAt);
    const causeTimeout = reading.cause === 'unschedulable' ? entry.timeouts.unschedulable : reading.cause === 'image-pull' ? entry.timeouts.imagePull : undefined;
    const bounds: number[] = [];
    if (entry.timeouts.start !== undefined) bounds.push(created + entry.timeouts.start);
    if (causeTimeout !== undefined) bounds.push(Date.parse(reading.since) + causeTimeout);
    if (bounds.length === 0) return this.clearPendingTimer(entry);
    const deadline = Math.min(...bounds);
    if (entry.pendingTimer?.cause === reading.cause && entry.pendingTimer.deadline === deadline) return;
    this.clearPendingTimer(entry);
    const timer = setTimeout(() => void this.pendingTimedOut(entry, reading.cause), Math.max(0, deadline - Date.now()));
    entry.pendingTimer = { cause: reading.cause, deadline, timer };
  }

  private async pendingTimedOut(entry: Entry, cause: PendingCause): Promise<void> {
    if (isTerminal(entry.status) || this.closed) return;
    const podEvents = await this.podEvents(entry.status.podName);
    if (isTerminal(entry.status)) return;
    const reason = entry.status.reason ?? (cause === 'unschedulable' ? 'Unschedulable' : 'PendingTimeout');
    this.finish(entry, { phase: 'timed-out', reason, message: `pending (${cause}) past its timeout${entry.status.message ? `: ${entry.status.message}` : ''}`, podEvents });
    await this.release(entry);
  }

  private armRunTimer(entry: Entry, startedAt: string): void {
    if (entry.runTimer || entry.timeouts.run === undefined) return;
    const deadline = Date.parse(startedAt) + entry.timeouts.run;
    entry.runTimer = setTimeout(() => {
      if (isTerminal(entry.status) || this.closed) return;
      this.finish(entry, { phase: 'timed-out', reason: 'DeadlineExceeded', message: `ran longer than its run timeout of ${entry.timeouts.run} ms` });
      void this.release(entry);
    }, Math.max(0, deadline - Date.now()));
  }

  private clearPendingTimer(entry: Entry): void {
    clearTimeout(entry.pendingTimer?.timer);
    entry.pendingTimer = undefined;
  }

  private clearTimers(entry: Entry): void {
    this.clearPendingTimer(entry);
    clearTimeout(entry.runTimer);
    entry.runTimer = undefined;
  }

  /** The pod's last events (oldest first), for a timed-out task's status: one list, only at a timeout. */
  private async podEvents(podName: string): Promise<string[]> {
    try {
      const query = new URLSearchParams({ fieldSelector: `involvedObject.name=${podName}` });
      const list = await this.client.request<{ items: { reason?: string; message?: string; lastTimestamp?: string; eventTime?: string }[] }>({
        method: 'GET',
        path: `/api/v1/namespaces/${this.namespace}/events?${query}`,
        context: { verb: 'list', resource: 'events', namespace: this.namespace },
      });
      return list.items.slice(-5).map((e) => `${e.reason ?? ''}: ${e.message ?? ''}`.trim());
    } catch (err) {
      this.logger.debug({ err, pod: podName }, '[rollcall] [pod-runner] could not list the pod events of a timed-out task');
      return [];
    }
  }

  // --- ending ---

  private setStatus(entry: Entry, change: Partial<TaskStatus>): void {
    const next = { ...entry.status, ...change };
    for (const key of Object.keys(next) as (keyof TaskStatus)[]) if (next[key] === undefined) delete next[key];
    if (JSON.stringify(next) === JSON.stringify(entry.status)) return;
    entry.status = next;
    this.publish(entry.status);
  }

  /** Records a terminal status once, frees the task's slot, wakes `result()` and the queue. */
  private finish(entry: Entry, change: Partial<TaskStatus> & { phase: TaskPhase }): void {
    if (isTerminal(entry.status)) return;
    this.clearTimers(entry);
    this.setStatus(entry, { pendingCause: undefined, finishedAt: new Date().toISOString(), ...change });
    const freed = entry.holdsSlot;
    this.freeSlot(entry);
    for (const waiter of entry.waiters.splice(0)) waiter.resolve(copy(entry.status));
    // a pod gone frees quota too: try the queue now rather than after the requeue pause
    if (freed) this.requeueUntil = 0;
    this.pump();
  }

  /** Lets the pod of a recorded task go: the final status onto the pod and the finalizer off in one patch, then delete it (or keep a failed one a while). */
  private release(entry: Entry): Promise<void> {
    const pod = entry.pod;
    if (!pod || this.closed) return Promise.resolve();
    if (entry.releasing) {
      entry.releaseAgain = true;
      return entry.releasing;
    }
    entry.releasing = this.releasePod(pod, entry).finally(() => {
      entry.releasing = undefined;
      if (entry.releaseAgain && entry.pod && entry.pod !== pod) {
        entry.releaseAgain = false;
        void this.release(entry);
      }
    });
    return entry.releasing;
  }

  private async releasePod(pod: Pod, entry: Entry | undefined): Promise<void> {
    const name = pod.metadata.name;
    try {
      if (pod.metadata.finalizers?.includes(FINALIZER)) {
        const annotations: Record<string, string> = {};
        if (entry) annotations[RECORDED_ANNOTATION] = JSON.stringify(entry.status);
        if (entry?.status.phase === 'cancelled') annotations[CANCELLED_ANNOTATION] = entry.status.message ?? 'cancelled';
        await this.client.request({
          method: 'PATCH',
          path: `${this.podsPath()}/${name}`,
          // resourceVersion: another controller's finalizer added meanwhile is not dropped; on a conflict the next event retries
          body: { metadata: { resourceVersion: pod.metadata.resourceVersion, finalizers: pod.metadata.finalizers.filter((f) => f !== FINALIZER), annotations } },
          contentType: 'application/merge-patch+json',
          context: this.context('patch', name),
        });
      }
      if (pod.metadata.deletionTimestamp || entry?.deleteRequested) return;
      const keepMs = this.options.keepFailedPodsMs ?? 0;
      if (entry && keepMs > 0 && entry.status.phase !== 'succeeded' && entry.status.phase !== 'cancelled') {
        entry.deleteRequested = true;
        const finished = Date.parse(entry.status.finishedAt ?? new Date().toISOString());
        entry.deleteTimer = setTimeout(() => void this.deletePod(name, undefined), Math.max(0, finished + keepMs - Date.now()));
        return;
      }
      if (entry) entry.deleteRequested = true;
      await this.deletePod(name, entry?.cancelGraceSeconds);
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) return;
      if (!entry) return;
      entry.deleteRequested = false;
      this.logger.debug({ err, pod: name }, '[rollcall] [pod-runner] could not release a finished pod yet; retrying from its latest state');
      // A conflict means the watch brings a newer state; a refusal or an outage is retried after a pause.
      clearTimeout(entry.deleteTimer);
      entry.deleteTimer = setTimeout(() => {
        const latest = this.informer?.get(name);
        if (latest && entry.pod) {
          entry.pod = latest;
          void this.release(entry);
        }
      }, RELEASE_RETRY_MS);
    }
  }

  private async deletePod(name: string, graceSeconds: number | undefined): Promise<void> {
    try {
      await this.client.request({
        method: 'DELETE',
        path: `${this.podsPath()}/${name}`,
        body: { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background', ...(graceSeconds === undefined ? {} : { gracePeriodSeconds: graceSeconds }) },
        context: this.context('delete', name),
      });
    } catch (err) {
      if (!hasCode(err, 'NOT_FOUND')) throw err;
    }
  }

  // --- helpers ---

  private publish(status: TaskStatus): void {
    this.hub.publish(status);
    try {
      this.options.onStatus?.(copy(status));
    } catch (err) {
      this.logger.error({ err }, '[rollcall] [pod-runner] the onStatus callback threw');
    }
  }

  private requireEntry(taskId: string): Entry {
    const entry = this.tasks.get(taskId);
    if (!entry) throw new StoreConflictError('NOT_FOUND', `no task ${JSON.stringify(taskId)} in pod runner ${this.name}`, { backend: BACKEND });
    return entry;
  }

  private assertOpen(): void {
    if (this.closed) throw new ClosedError('the pod runner was closed', { backend: BACKEND });
  }

  private podsPath(): string {
    return `/api/v1/namespaces/${this.namespace}/pods`;
  }

  private context(verb: string, name?: string): RequestContext {
    return { verb, resource: 'pods', namespace: this.namespace, name };
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
        submittedAt: new Date().toISOString(),
      });
      try {
        await this.client.request({ method: 'POST', path: `${this.podsPath()}?dryRun=All`, body: pod, context: this.context('create (dry run)', pod.metadata.name) });
      } catch (err) {
        if (hasCode(err, 'ALREADY_EXISTS')) continue;
        if (hasCode(err, 'INVALID_ARGUMENT')) {
          throw new ConfigurationError(`templates[${resolved.index}] (${resolved.rule.name}): the API server rejects its pod: ${(err as Error).message}`, { key: `templates[${resolved.index}]`, backend: BACKEND, cause: err });
        }
        throw err;
      }
    }
  }
}
