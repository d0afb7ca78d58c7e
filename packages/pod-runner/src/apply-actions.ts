import { hasCode, RegistryError, type Clock, type Logger } from '@rollcall/core';
import type { RunnerActivity } from '@rollcall/pod-runner-activity';
import type { Action } from './actions.js';
import { requeueReason } from './errors.js';
import type { Expectations } from './expectations.js';
import { buildPod, podName } from './pod-build.js';
import { classifyPodCreate } from './pod-create-answer.js';
import { FINALIZER, SPEC_HASH_ANNOTATION, type Pod, type PodTemplateSpec } from './pod.js';
import type { PodsApi } from './pods-api.js';
import { queuePlace, type TaskAdmission } from './task-admission.js';
import type { TaskRecord, TaskRecordBody } from './task-record.js';
import type { TaskStore } from './task-store.js';
import type { DeliveryState, StatusDelivery } from './status-delivery.js';
import type { TaskStatus } from './task.js';
import type { TestHooks, WriteMeaning } from './test-hooks.js';

/** A template rule as the applier builds pods from it. */
export interface ApplierTemplate {
  template: PodTemplateSpec;
  /** The container that runs the task; default the template's first. */
  container?: string;
}

/** What an {@link ActionApplier} takes. */
export interface ActionApplierOptions {
  runner: string;
  namespace: string;
  /** This term's fencing token: every write is stamped with it. */
  term: number;
  store: TaskStore;
  pods: PodsApi;
  expectations: Expectations;
  admission: TaskAdmission;
  clock: Clock;
  logger: Logger;
  /** The template rule by name; undefined when the runner has no such rule (the create is held). */
  template(name: string): ApplierTemplate | undefined;
  /** Asks for a sync of the task within `delayMs` (default now): every answer goes back through the sync. */
  enqueue(taskId: string, delayMs?: number): void;
  /** Hands terminal statuses over to `onStatus`; its acknowledgement comes back through a later sync as `writeRecord(ack)`. */
  delivery: StatusDelivery;
  /** Starts (or goes on with) the capture of the pod's log: a `followLogs` action. Default: logs are not captured. */
  followLogs?(record: TaskRecord, pod: Pod): void;
  /** Retries and requeues, for the activity stream and metrics. */
  emit?(activity: RunnerActivity): void;
  /** Called before each record write with its verb; throws to hold it back (the term is over). The pod writes' is the PodsApi's own. */
  fence?(verb: string): void;
  /** A record write was answered: the record as stored (the informer shows it later). */
  recordWritten?(record: TaskRecord): void;
  /** A status change, for the activity stream and metrics. */
  publish?(status: TaskStatus): void;
  hooks?: TestHooks;
}

/**
 * The only writer of the second-generation runner: performs the actions
 * `decide` returns for one task, each one conditional request stamped with
 * the term. An answer is never acted on here beyond bookkeeping: a conflict
 * (409, 412, 404) or a write re-enqueues the task, so the next sync decides
 * from what the informers show — no blind retry.
 */
export class ActionApplier {
  private readonly events = new Map<string, { podName: string; lines: string[] }>();
  /** The last quota or rate refusal of each task's create in this term. */
  private readonly refusals = new Map<string, string>();

  constructor(private readonly options: ActionApplierOptions) {}

  /** The hand-over state of the task's terminal status in this term. */
  delivery(taskId: string): DeliveryState {
    return this.options.delivery.state(taskId);
  }

  /** The pod events fetched for the task's timeout, if any. */
  eventsOf(taskId: string): { podName: string; lines: string[] } | undefined {
    return this.events.get(taskId);
  }

  /** The last quota or rate refusal of the task's create in this term, if its pod was not created since. */
  refusalOf(taskId: string): string | undefined {
    return this.refusals.get(taskId);
  }

  /** Drops what the applier remembers of a task (its record is gone). */
  forget(taskId: string): void {
    this.options.delivery.forget(taskId);
    this.events.delete(taskId);
    this.refusals.delete(taskId);
  }

  /**
   * Performs `actions` in order for the task of `record` (as read). Stops at a
   * conflict, or where the record was written otherwise than decided: the task
   * is enqueued and the sync that follows decides again. Resolves false then
   * (the rest, a publish included, was not done).
   */
  async apply(record: TaskRecord, actions: readonly Action[]): Promise<boolean> {
    const taskId = record.body.task.taskId;
    for (const action of actions) {
      const done = await this.perform(record, action);
      if (!done) {
        this.options.enqueue(taskId);
        return false;
      }
    }
    return true;
  }

  /** One action; false when the rest must wait for a new read (a conflict: nothing written). */
  private async perform(record: TaskRecord, action: Action): Promise<boolean> {
    const { store, pods, term } = this.options;
    const taskId = record.body.task.taskId;
    switch (action.type) {
      case 'createPod':
        return this.createPod(record);
      case 'resolveCreate':
        return this.resolveCreate(record, action.podName);
      case 'writeRecord': {
        this.options.fence?.('update');
        const outcome = await store.update(record, this.withSpecHash(record, action.body), { term, clearRequests: action.clearRequests });
        if (outcome.type === 'conflict') return false;
        this.options.recordWritten?.(outcome.record);
        if (action.meaning === 'ack' || action.meaning === 'resubmit') this.options.delivery.forget(taskId);
        if (action.meaning === 'retry') this.retried(action.body);
        this.events.delete(taskId);
        await this.wrote(action.meaning, taskId);
        return true;
      }
      case 'deleteRecord': {
        this.options.fence?.('delete');
        const outcome = await store.delete(record);
        if (outcome.type === 'conflict') return false;
        await this.wrote('deleteRecord', taskId);
        return true;
      }
      case 'releasePod': {
        const { expectations } = this.options;
        // released already, the pod cache not there yet: its event enqueues the task (a second patch would be a 409)
        if (expectations.releaseUnseen(action.pod)) return true;
        const finalizers = action.pod.metadata.finalizers;
        const metadata = finalizers?.includes(FINALIZER) ? { finalizers: finalizers.filter((f) => f !== FINALIZER) } : {};
        const ok = await this.conditional(async () => {
          const patched = await pods.patchMetadata(action.pod.metadata.name, metadata, { resourceVersion: action.pod.metadata.resourceVersion, term });
          expectations.released(action.pod.metadata.name, patched?.metadata?.resourceVersion);
        });
        if (ok) await this.wrote('releasePod', taskId);
        return ok;
      }
      case 'deletePod': {
        const { uid, resourceVersion, name } = action.pod.metadata;
        const ok = await this.conditional(() => pods.delete(name, action.graceSeconds, uid && resourceVersion ? { uid, resourceVersion } : undefined));
        if (ok) await this.wrote('deletePod', taskId);
        return ok;
      }
      case 'followLogs':
        this.options.followLogs?.(record, action.pod);
        return true;
      case 'fetchEvents':
        this.events.set(taskId, { podName: action.pod.metadata.name, lines: await pods.recentEvents(action.pod.metadata.name, this.options.logger) });
        this.options.enqueue(taskId);
        return true;
      case 'deliver':
        this.options.delivery.deliver(action.status);
        return true;
      case 'publish':
        this.options.publish?.(action.status);
        return true;
    }
  }

  /** A record moved to another attempt (a retry, a resubmit) carries that attempt's spec hash: decide keeps the old one. */
  private withSpecHash(record: TaskRecord, body: TaskRecordBody): TaskRecordBody {
    if (body.state !== 'queued' || body.task.attempt === record.body.task.attempt) return body;
    const built = this.build(body);
    return built ? { ...body, specHash: built.specHash } : body;
  }

  private build(body: TaskRecordBody): { pod: Pod; specHash: string } | undefined {
    const rule = this.options.template(body.template);
    if (!rule) return undefined;
    const { runner, namespace, term } = this.options;
    return buildPod({ runner, namespace, task: body.task, template: rule.template, templateName: body.template, container: rule.container, submittedAt: body.submittedAt, fencingToken: term });
  }

  private async createPod(record: TaskRecord): Promise<boolean> {
    const { expectations, admission, pods, term, clock } = this.options;
    const body = record.body;
    const taskId = body.task.taskId;
    const built = this.build(body);
    if (!built) throw new Error(`task ${JSON.stringify(taskId)} names template ${JSON.stringify(body.template)}, which this runner does not have`);
    const { pod, specHash } = built;
    const attempt = body.task.attempt ?? 1;
    // expected before it is sent: a lost answer must not let a second create through
    expectations.expect(taskId, pod.metadata.name, attempt, clock.wallNow().getTime());
    admission.occupy(taskId, body.task.taskType);
    try {
      await pods.create(pod, term);
      admission.created();
      this.refusals.delete(taskId);
      await this.wrote('createPod', taskId);
      return true;
    } catch (err) {
      switch (classifyPodCreate(err)) {
        case 'exists':
          return this.adoptOrFail(record, pod.metadata.name, specHash);
        case 'requeue': {
          this.unexpect(taskId);
          // back in line at its place at once, not at its own sync after the pause: a sync of any task when the pause
          // ends would give the slot to the next in line, and the task waiting would not count in the queue meanwhile
          admission.enqueue(taskId, body.task.taskType, queuePlace(body));
          this.options.enqueue(taskId, admission.refused());
          this.refusals.set(taskId, err instanceof Error ? err.message : String(err));
          if (err instanceof RegistryError) this.options.emit?.({ type: 'requeue', taskType: body.task.taskType, reason: requeueReason(err) });
          this.options.logger.info({ err, task: taskId }, '[rollcall] [pod-runner] a pod create was refused for quota; the queue pauses');
          return true;
        }
        case 'failed':
          this.unexpect(taskId);
          return this.endCreateFailed(record, err instanceof Error ? err.message : String(err));
        case 'uncertain':
          // the expectation stays: decide resolves it with a GET once it expires
          this.options.logger.warn({ err, task: taskId }, '[rollcall] [pod-runner] a pod create got no answer; resolved once its expectation expires');
          return true;
        case 'held':
          this.unexpect(taskId);
          throw err;
      }
    }
  }

  private unexpect(taskId: string): void {
    this.options.expectations.forget(taskId);
    this.options.admission.release(taskId);
  }

  /** A pod of that name exists: the task's own (same spec hash) is adopted; another spec ends the attempt. */
  private async adoptOrFail(record: TaskRecord, name: string, specHash: string): Promise<boolean> {
    const existing = await this.options.pods.get(name);
    const theirs = existing.metadata.annotations?.[SPEC_HASH_ANNOTATION];
    if (theirs === specHash) return true;
    this.unexpect(record.body.task.taskId);
    return this.endCreateFailed(record, `pod ${name} exists with another spec (spec hash ${theirs ?? 'none'}, this task's ${specHash}); it was not adopted`, 'SpecConflict');
  }

  /** The expectation expired unseen: GET the pod; landed → the informer will show it (keep waiting on it); absent → forget, so decide may create again. */
  private async resolveCreate(record: TaskRecord, podName: string): Promise<boolean> {
    const taskId = record.body.task.taskId;
    try {
      await this.options.pods.get(podName);
      this.options.expectations.expect(taskId, podName, record.body.task.attempt ?? 1, this.options.clock.wallNow().getTime());
    } catch (err) {
      if (!hasCode(err, 'NOT_FOUND')) throw err;
      this.unexpect(taskId);
    }
    this.options.enqueue(taskId);
    return true;
  }

  /** Writes the attempt's end; false either way, as the decision's publish is of the status before it. */
  private async endCreateFailed(record: TaskRecord, message: string, reason = 'CreateFailed'): Promise<boolean> {
    this.options.fence?.('update');
    const body = record.body;
    const attempt = body.task.attempt ?? 1;
    const status: TaskStatus = {
      taskId: body.task.taskId, taskType: body.task.taskType, tags: { ...body.task.tags }, attempt, phase: 'failed', reason, message,
      podName: podName(this.options.runner, body.task.taskId, attempt), template: body.template, submittedAt: body.submittedAt, finishedAt: this.options.clock.wallNow().toISOString(),
      ...(body.previousAttempts ? { previousAttempts: body.previousAttempts } : {}),
    };
    const outcome = await this.options.store.update(record, { ...body, state: 'finished', status }, { term: this.options.term });
    if (outcome.type === 'written') {
      this.options.recordWritten?.(outcome.record);
      await this.wrote('end', body.task.taskId);
    }
    return false;
  }

  /** A pod write: a conflict (changed, or gone) is false, anything else throws. */
  private async conditional(write: () => Promise<unknown>): Promise<boolean> {
    try {
      await write();
      return true;
    } catch (err) {
      if (hasCode(err, 'CONFLICT', 'NOT_FOUND')) return false;
      throw err;
    }
  }

  /** A retry's next attempt is stored: the ended attempt's outcome names why. */
  private retried(body: TaskRecordBody): void {
    const ended = body.previousAttempts?.at(-1);
    this.options.emit?.({ type: 'retry', taskType: body.task.taskType, reason: ended?.reason ?? ended?.phase ?? 'unknown' });
  }

  private async wrote(meaning: WriteMeaning, taskId: string): Promise<void> {
    await this.options.hooks?.afterWrite?.(meaning, taskId);
  }
}
