import { LeaseLostError, type Clock, type Logger } from '@rollcall/core';
import { type ApiClient, BACKEND, ResourceInformer } from '@rollcall/kube-client';
import { ActionApplier, type ApplierTemplate } from './apply-actions.js';
import { decide, DEFAULT_DECIDE_SETTINGS, type DecideMemo, type DecideSettings } from './decide.js';
import { Expectations } from './expectations.js';
import type { LogCapture } from './log-capture.js';
import { RUNNER_LABEL, TASK_ID_LABEL, type Pod } from './pod.js';
import { PodsApi } from './pods-api.js';
import { StatusDelivery } from './status-delivery.js';
import { SyncLoop } from './sync-loop.js';
import { queuePlace, TaskAdmission } from './task-admission.js';
import { type TaskRecord, WRITE_TERM_ANNOTATION } from './task-record.js';
import { atOrAfter, type TaskStore } from './task-store.js';
import type { TaskStatus } from './task.js';
import { TermLogs } from './term-logs.js';
import type { TestHooks } from './test-hooks.js';
import type { RunnerActivity } from '@rollcall/pod-runner-activity';

/** What a {@link RunnerTerm} takes. */
export interface RunnerTermOptions {
  client: ApiClient;
  namespace: string;
  runner: string;
  /** The term's fencing token, as the term fence entered it: every write is stamped with it. */
  term: number;
  /** The runner's record store, started (its informer is shared with the process; the term only subscribes). */
  store: TaskStore;
  clock: Clock;
  logger: Logger;
  /** The template rules by name. */
  templates: ReadonlyMap<string, ApplierTemplate>;
  /** Pods pending or running at once, all task types. */
  capacity: number;
  /** Pods pending or running at once, per task type. Default none. */
  perTypeCapacity?: Readonly<Record<string, number>>;
  /** The first pause after a quota refusal. Milliseconds. Default 1000. */
  requeueDelayMs?: number;
  /**
   * Hands a terminal status over (the runner's `onStatus`): a return that is not
   * a thenable, or a thenable that resolves, acknowledges it (the record then
   * becomes `done`); a throw or a rejection hands it over again after a pause
   * (status-delivery.ts), on this term's queue.
   */
  deliver(status: TaskStatus): unknown;
  /** Every status change (the runner's events and activity; a change on the way goes to `onStatus` from there). */
  publish?(status: TaskStatus): void;
  /** Retries and quota requeues, for the activity stream and metrics. */
  emit?(activity: RunnerActivity): void;
  /** The runner's log capture (one per process); undefined when logs are not captured. The term stops its captures when it closes. */
  logs?: LogCapture;
  settings?: DecideSettings;
  /** Tasks synced at once. Default 8. */
  concurrency?: number;
  /** Pod watch: restart after this much silence. Milliseconds. Default 90000. */
  watchSilenceTimeoutMs?: number;
  /** Pod watch: server-side lifetime of one request. Seconds. Default 300. */
  watchTimeoutSeconds?: number;
  /** Whether this process still leads the term, asked before each write (runner-election.ts). Default: while the term is open. */
  leads?(): boolean;
  /** A later term's stamp seen on a record or pod of this runner: told once; the term's writes stop at once. */
  superseded?(later: number): void;
  /** @internal */
  hooks?: TestHooks;
}


/** A pod that holds a capacity slot: not ended. */
const live = (pod: Pod) => pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';

/**
 * One term of the pod runner's leadership (core's failover term's shape):
 * created when this process is elected and its term fence is up, closed when
 * it loses. It owns what only a leader has — the sync loop, admission,
 * expectations, the applier — and the pod informer. Informer events only
 * enqueue a task id; one {@link sync} reads the record and the task's pods
 * from the caches, asks `decide`, and has the applier act.
 */
export class RunnerTerm {
  private readonly loop: SyncLoop;
  private readonly admission: TaskAdmission;
  private readonly expectations = new Expectations();
  private readonly applier: ActionApplier;
  private readonly delivery: StatusDelivery;
  private readonly logs: TermLogs;
  private readonly pods: ResourceInformer<Pod>;
  private readonly memos = new Map<string, DecideMemo>();
  /** Record versions this term wrote that its informer has not shown yet, by record name. */
  private readonly unseen = new Map<string, string>();
  /** Submits waiting for their task's first complete sync, by task id. */
  private readonly waiters = new Map<string, (() => void)[]>();
  private unsubscribe: (() => void) | undefined;
  private closed = false;
  /** A later term than this one, as a stamp on the runner's objects showed it. */
  private later: number | undefined;
  /** Until every cached task is accounted, events only wait: {@link start} enqueues them all. */
  private started = false;

  constructor(private readonly options: RunnerTermOptions) {
    const { client, namespace, runner, clock, logger } = options;
    this.loop = new SyncLoop({ clock, sync: (id) => this.sync(id), concurrency: options.concurrency, onError: (id, err) => {
        logger.warn({ err, task: id }, '[rollcall] [pod-runner] a task sync failed; retried');
        this.wake(id);
      } });
    this.admission = new TaskAdmission({ clock, total: options.capacity, perType: options.perTypeCapacity ?? {}, requeueDelayMs: options.requeueDelayMs ?? 1000 });
    const fence = (verb: string) => {
      if (!this.closed && this.later === undefined && options.leads?.() !== false) return;
      // a write this term decided and must not send: counted (rollcall_pod_runner_fenced_writes_total), never retried
      options.emit?.({ type: 'fenced', verb });
      throw new LeaseLostError('taken', `term ${options.term} of runner ${runner} is over`, { backend: BACKEND });
    };
    const api = new PodsApi(client, namespace, fence);
    const enqueue = (id: string, delayMs?: number) => this.loop.enqueue(id, delayMs);
    // the hand-over's pauses and acknowledgements come back as syncs: no timer of its own
    this.delivery = new StatusDelivery({ onStatus: options.deliver, clock, logger, schedule: enqueue });
    this.logs = new TermLogs({ capture: options.logs, store: options.store, enqueue });
    this.applier = new ActionApplier({
      runner, namespace, term: options.term, store: options.store, pods: api, expectations: this.expectations, admission: this.admission, clock, logger,
      template: (name) => options.templates.get(name),
      enqueue, fence, recordWritten: (record) => this.wrote(record),
      delivery: this.delivery, publish: options.publish, emit: options.emit, hooks: options.hooks,
      followLogs: (record, pod) => this.logs.follow(record, pod),
    });
    this.pods = new ResourceInformer<Pod>(
      { client, logger, path: api.path, labelSelector: `${RUNNER_LABEL}=${runner}`, resource: 'pods', namespace, silenceTimeoutMs: options.watchSilenceTimeoutMs ?? 90_000, timeoutSeconds: options.watchTimeoutSeconds ?? 300 },
      {
        upsert: (pod) => this.podChanged(pod),
        delete: (pod) => this.podGone(pod),
        interrupted: (err) => {
          options.emit?.({ type: 'watchEnded', code: err.code });
          logger.debug({ err }, '[rollcall] [pod-runner] pod watch interrupted; resuming');
        },
      },
    );
  }

  /** Lists the pods, then accounts every cached task's slot and enqueues each in submit order; resolves once each was synced (or its sync failed). */
  async start(): Promise<void> {
    this.unsubscribe = this.options.store.subscribe({
      upsert: (record) => this.recordChanged(record),
      delete: (record) => {
        this.unseen.delete(record.name);
        this.enqueue(record.body.task.taskId);
      },
    });
    await this.pods.start();
    const records = this.options.store.inSubmitOrder();
    for (const record of records) this.sawTerm(record.writeTerm);
    // every slot held is counted before any task is admitted
    for (const record of records) this.account(record.body.task.taskId, record);
    this.admission.recompute();
    this.started = true;
    // start resolves once each task was synced: what ended while no runner was up is stored and handed over by then
    const first = records.map((record) => this.synced(record.body.task.taskId));
    for (const record of records) this.loop.enqueue(record.body.task.taskId);
    await Promise.all(first);
  }

  /** Ends the term: nothing more is written (the pods' fence throws), pending syncs are dropped; resolves once the syncs in flight end. */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe?.();
    this.pods.close();
    this.delivery.close();
    for (const waiting of this.waiters.values()) for (const wake of waiting) wake();
    this.waiters.clear();
    await this.loop.close();
    await this.logs.close();
  }

  /** The task's pods of every attempt, from the informer. */
  podsOf(taskId: string): Pod[] {
    return this.pods.list().filter((p) => p.metadata.labels?.[TASK_ID_LABEL] === taskId);
  }

  /** The status this term last published for the task (its pods as they show), if it synced the task. */
  status(taskId: string): TaskStatus | undefined {
    const status = this.memos.get(taskId)?.status;
    const refusal = this.applier.refusalOf(taskId);
    // a refusal answered after the decision that published the status: said at once, as decide says it next time
    return status?.phase === 'queued' && !status.reason && refusal !== undefined ? { ...status, message: `requeued: ${refusal}` } : status;
  }

  /** Resolves after the next sync that decided on the task's record, as the informer shows it, and did all it decided (or when the term closes). */
  synced(taskId: string): Promise<void> {
    return new Promise((resolve) => this.waiters.set(taskId, [...(this.waiters.get(taskId) ?? []), resolve]));
  }

  /** Resolves once the task's end, as its record holds it, has been handed to `onStatus` (or the record moved on, or the term closed). */
  async handedOver(taskId: string): Promise<void> {
    while (!this.closed && this.options.store.get(taskId)?.body.state === 'finished' && this.delivery.state(taskId) === 'none') await this.synced(taskId);
  }

  /** Tasks waiting for a slot (not those in a retry's backoff). */
  get queueDepth(): number {
    return this.admission.waiting;
  }

  /** How many times the pod collection was listed (1 after start; one more per 410). */
  get podLists(): number {
    return this.pods.lists;
  }

  /** Syncs one task; resolves with the milliseconds until it must look again. */
  async sync(taskId: string): Promise<number | undefined> {
    if (this.closed) return undefined;
    const { store, clock } = this.options;
    const record = store.get(taskId);
    if (!record) {
      this.unseen.delete(store.nameOf(taskId));
      this.expectations.forget(taskId);
      this.admission.dequeue(taskId);
      this.admission.release(taskId);
      this.applier.forget(taskId);
      this.memos.delete(taskId);
      this.loop.forget(taskId);
      this.admitNext();
      return undefined;
    }
    const pods = this.podsOf(taskId);
    this.logs.seen(record, pods);
    this.account(taskId, record, pods);
    this.admitNext();
    const now = clock.wallNow().getTime();
    const decision = decide(
      {
        runner: this.options.runner, term: this.options.term, record, pods,
        writeUnseen: this.unseen.has(record.name),
        expecting: this.expectations.get(taskId, pods),
        admitted: this.admission.admits(taskId),
        delivery: this.applier.delivery(taskId),
        logsStored: (name) => this.logs.logsStored(this.pods.get(name)),
        events: this.applier.eventsOf(taskId),
        refusal: this.applier.refusalOf(taskId),
        memo: this.memos.get(taskId),
      },
      now,
      this.options.settings ?? DEFAULT_DECIDE_SETTINGS,
    );
    const applied = await this.applier.apply(record, decision.actions);
    // a decision cut short published nothing: the memo keeps the status last published, so the next sync publishes again
    const memo = applied ? decision.memo : { ...decision.memo, status: this.memos.get(taskId)?.status };
    if (applied && memo.status && decision.actions.some((a) => a.type === 'createPod') && this.expectations.get(taskId, pods)) {
      // the create answered: its pod waits on its scheduling until the informer shows more (the watch may skip that state)
      memo.status = { ...memo.status, phase: 'pending', pendingCause: 'scheduling' };
      this.options.publish?.(memo.status);
    }
    this.memos.set(taskId, memo);
    if (applied && !this.unseen.has(record.name)) this.wake(taskId);
    const delays = [decision.wakeAt === undefined ? undefined : Math.max(0, decision.wakeAt - now), this.expectationEndsInMs(taskId), this.admission.pauseEndsInMs(), this.delivery.pauseLeftMs(taskId)].filter((d): d is number => d !== undefined);
    return delays.length ? Math.min(...delays) : undefined;
  }

  /**
   * Until the task's create expectation expires, if one is open after the sync:
   * a create set it after `decide` ran (no wake for it in the decision), and a
   * create lost on the way (no answer, no pod) brings no event — without this
   * sync at its end it would hold its slot for the rest of the term (issue 35).
   */
  private expectationEndsInMs(taskId: string): number | undefined {
    const expecting = this.expectations.get(taskId, this.podsOf(taskId));
    if (!expecting) return undefined;
    const ttlMs = (this.options.settings ?? DEFAULT_DECIDE_SETTINGS).expectationTtlMs;
    return Math.max(0, expecting.since + ttlMs - this.options.clock.wallNow().getTime());
  }

  private wake(taskId: string): void {
    const waiting = this.waiters.get(taskId);
    this.waiters.delete(taskId);
    for (const resolve of waiting ?? []) resolve();
  }

  /** The task's slot and place in line, from its record and its pods as cached. */
  private account(taskId: string, record: TaskRecord, pods = this.podsOf(taskId)): void {
    const type = record.body.task.taskType;
    const expecting = this.expectations.get(taskId, pods);
    if (pods.some(live) || expecting) return this.admission.occupy(taskId, type);
    this.admission.release(taskId);
    if (record.body.state === 'queued' && record.cancelRequested === undefined) {
      this.admission.enqueue(taskId, type, queuePlace(record.body));
    } else this.admission.dequeue(taskId);
  }

  /** Syncs the tasks a freed slot admits. */
  private admitNext(): void {
    for (const id of this.admission.recompute()) this.loop.enqueue(id);
  }

  private wrote(record: TaskRecord): void {
    // what the informer has shown, not the cache (which holds the write's answer at once): decide waits for the event
    const shown = this.options.store.shown(record.body.task.taskId);
    if (shown === undefined || !atOrAfter(shown, record.resourceVersion)) this.unseen.set(record.name, record.resourceVersion);
  }

  private recordChanged(record: TaskRecord): void {
    this.sawTerm(record.writeTerm);
    const ours = this.unseen.get(record.name);
    // the informer shows this term's write, or a later one (resourceVersions are etcd revisions: ordered)
    if (ours !== undefined && atOrAfter(record.resourceVersion, ours)) this.unseen.delete(record.name);
    this.enqueue(record.body.task.taskId);
  }

  private enqueue(taskId: string): void {
    if (this.started) this.loop.enqueue(taskId);
  }

  private podGone(pod: Pod): void {
    this.expectations.podGone(pod.metadata.name);
    const taskId = pod.metadata.labels?.[TASK_ID_LABEL];
    if (taskId !== undefined) this.logs.gone(taskId, pod);
    this.podChanged(pod);
  }

  private podChanged(pod: Pod): void {
    this.sawTerm(Number(pod.metadata.annotations?.[WRITE_TERM_ANNOTATION]));
    const taskId = pod.metadata.labels?.[TASK_ID_LABEL];
    if (taskId !== undefined) this.enqueue(taskId);
  }

  /** A write stamped with a later term than this one: another process leads now (terms only rise). */
  private sawTerm(term: number | undefined): void {
    if (term === undefined || !Number.isFinite(term) || term <= this.options.term || this.later !== undefined) return;
    this.later = term;
    this.options.superseded?.(term);
  }
}
