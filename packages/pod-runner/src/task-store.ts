import { ClosedError, type Clock, hasCode, type Logger, RegistryError } from '@rollcall/core';
import { type ApiClient, type KubeStatus, type RequestContext, ResourceInformer } from '@rollcall/kube-client';
import { BACKEND } from './errors.js';
import type { Task } from './task.js';
import {
  assertSubmitSize,
  compareSubmitOrder,
  CANCEL_REQUESTED_ANNOTATION,
  cancelRequestValue,
  decodeRecord,
  encodeRecord,
  recordName,
  recordSelector,
  SUBMIT_REQUESTED_ANNOTATION,
  type RecordObject,
  type TaskRecord,
  type TaskRecordBody,
} from './task-record.js';

/** What {@link TaskStore} takes. */
export interface TaskStoreOptions {
  client: ApiClient;
  /** The namespace of the runner's pods and records. */
  namespace: string;
  /** The runner's name: its records carry `rollcall.dev/task-record=<runner>`. */
  runner: string;
  logger: Logger;
  /** Restart a silent record watch after this long. Milliseconds. Default 90000 (the runner's `watchSilenceTimeoutMs`). */
  silenceTimeoutMs?: number;
  /** Server-side lifetime of one watch request. Seconds. Default 300 (the runner's `watchTimeoutSeconds`). */
  timeoutSeconds?: number;
}

/** Told of every change the record informer sees; handlers only note it (the sync loop enqueues the task id). */
export interface TaskStoreHandlers {
  /** A record appeared or changed (after a relist: only those whose resourceVersion moved). */
  upsert?(record: TaskRecord, previous: TaskRecord | undefined): void;
  /** A record is gone: its last state. */
  delete?(record: TaskRecord): void;
  /** A record that cannot be read (CORRUPT_RECORD, or SCHEMA_MISMATCH from a newer runner): reported, never thrown through the informer. */
  unreadable?(name: string, error: RegistryError): void;
}

/** A create's outcome: made, or a record of that task was there already (read back from the server). */
export type CreateOutcome = { type: 'created'; record: TaskRecord } | { type: 'exists'; record: TaskRecord };

/**
 * A conditional write's outcome. `conflict`: the record changed since it was
 * read (CONFLICT: another resourceVersion or uid) or is gone (NOT_FOUND);
 * nothing was written and the caller syncs again from the cache — the store
 * never retries a conditional write blindly.
 */
export type WriteOutcome = { type: 'written'; record: TaskRecord } | { type: 'conflict'; code: 'CONFLICT' | 'NOT_FOUND' };
export type DeleteOutcome = { type: 'deleted' } | { type: 'conflict'; code: 'CONFLICT' | 'NOT_FOUND' };

/** What an update or a create by the leader is stamped with. */
export interface WriteOptions {
  /** The writing runner's term (its fencing token), stamped as `rollcall.dev/write-term`. */
  term: number;
  /** Drop the cancel and next-attempt requests: this write decided them. */
  clearRequests?: boolean;
}

/** Whether resourceVersion `seen` is `ours` or later (etcd revisions: ordered as numbers, though the API calls them opaque). */
export const atOrAfter = (seen: string, ours: string) => seen === ours || Number(seen) > Number(ours);

/** 409 (changed or uid mismatch), 412, or 404: the object is not the one read. */
function conflictCode(err: unknown): 'CONFLICT' | 'NOT_FOUND' | undefined {
  if (hasCode(err, 'NOT_FOUND')) return 'NOT_FOUND';
  if (hasCode(err, 'CONFLICT')) return 'CONFLICT';
  if (err instanceof RegistryError && (err.cause as KubeStatus | undefined)?.code === 412) return 'CONFLICT';
  return undefined;
}

/**
 * A runner's task records: one ConfigMap per task, followed by one informer
 * (label `rollcall.dev/task-record=<runner>`) and written only by conditional
 * requests — a create (a 409 reads the existing record back), a PUT at the
 * resourceVersion and uid read, a DELETE with preconditions on both. Every
 * write but a follower's submit is stamped with the writer's term. The two
 * request annotations (cancel, next attempt) are merge patches with no
 * precondition: idempotent asks that leave the body alone, decided by the
 * leader's sync. Every process — leader, follower, TaskView — may hold one.
 *
 * Read-your-writes: a write's answer (the record as stored) goes into the
 * cache at once, so the writer's `get` shows it before its informer does; an
 * informer event older than what the cache holds is then skipped (the event of
 * the write itself, and any later one, is told to the handlers as usual).
 */
export class TaskStore {
  private readonly informer: ResourceInformer<RecordObject>;
  private readonly records = new Map<string, TaskRecord>();
  private readonly unreadable = new Map<string, RegistryError>();
  /** The resourceVersion of each record as the informer last showed it (a write's answer aside). */
  private readonly shownVersions = new Map<string, string>();
  private readonly listeners = new Set<TaskStoreHandlers>();
  /** Rejects each {@link caughtUp} still waiting when the store closes. */
  private readonly ends = new Set<(err: Error) => void>();
  private closed = false;

  constructor(private readonly options: TaskStoreOptions) {
    this.informer = new ResourceInformer<RecordObject>(
      {
        client: options.client,
        logger: options.logger,
        path: this.path,
        labelSelector: recordSelector(options.runner),
        resource: 'configmaps',
        namespace: options.namespace,
        silenceTimeoutMs: options.silenceTimeoutMs ?? 90_000,
        timeoutSeconds: options.timeoutSeconds ?? 300,
      },
      { upsert: (object) => this.seen(object), delete: (object) => this.gone(object) },
    );
  }

  private get path(): string {
    return `/api/v1/namespaces/${this.options.namespace}/configmaps`;
  }

  private context(verb: string, name?: string): RequestContext {
    return { verb, resource: 'configmaps', namespace: this.options.namespace, name };
  }

  /** Lists the records and follows them; rejects with the mapped error (PERMISSION_DENIED, UNAVAILABLE) if the first list fails. */
  async start(handlers: TaskStoreHandlers = {}): Promise<void> {
    this.subscribe(handlers);
    await this.informer.start();
  }

  /** Adds handlers for the changes from now on (a cancel's wait for the end); returns their removal. */
  subscribe(handlers: TaskStoreHandlers): () => void {
    this.listeners.add(handlers);
    return () => this.listeners.delete(handlers);
  }

  /** Stops the informer; a {@link caughtUp} still waiting rejects with CLOSED. */
  close(): void {
    this.closed = true;
    this.informer.close();
    const closed = new ClosedError('the task store was closed', { backend: BACKEND });
    for (const end of [...this.ends]) end(closed);
    this.ends.clear();
  }

  /** The clock of its API client: where a request's retries wait. */
  get clock(): Clock {
    return this.options.client.clock;
  }

  /** The record name of a task of this runner. */
  nameOf(taskId: string): string {
    return recordName(this.options.runner, taskId);
  }

  /** The task's record as the informer last saw it. */
  get(taskId: string): TaskRecord | undefined {
    return this.records.get(this.nameOf(taskId));
  }

  /**
   * Resolves once the cache holds `record` at its resourceVersion or later, or
   * the informer has seen it deleted: for a record this store did not write
   * itself (a submit's 409 read back), so a `get` or `cancel` right after finds
   * it. Rejects with CLOSED if the store closes first.
   */
  caughtUp(record: TaskRecord): Promise<void> {
    const seen = (r: TaskRecord | undefined) => r !== undefined && r.uid === record.uid && atOrAfter(r.resourceVersion, record.resourceVersion);
    if (seen(this.records.get(record.name))) return Promise.resolve();
    if (this.closed) return Promise.reject(new ClosedError('the task store was closed', { backend: BACKEND }));
    return new Promise((resolve, reject) => {
      const settle = (done: () => void) => {
        off();
        this.ends.delete(fail);
        done();
      };
      const fail = (err: Error) => settle(() => reject(err));
      const off = this.subscribe({
        upsert: (r) => void (r.name === record.name && (r.uid !== record.uid || seen(r)) && settle(resolve)),
        delete: (r) => void (r.name === record.name && settle(resolve)),
      });
      this.ends.add(fail);
    });
  }

  /** The resourceVersion of the task's record as the informer last showed it, not counting this store's writes; undefined when it shows none. */
  shown(taskId: string): string | undefined {
    return this.shownVersions.get(this.nameOf(taskId));
  }

  /** Every readable record the informer holds, in no order. */
  list(): TaskRecord[] {
    return [...this.records.values()];
  }

  /** Every readable record, in submit order ({@link compareSubmitOrder}). */
  inSubmitOrder(): TaskRecord[] {
    return this.list().sort(compareSubmitOrder);
  }

  /** Records that cannot be read, by name, with why. */
  unreadableRecords(): ReadonlyMap<string, RegistryError> {
    return this.unreadable;
  }

  /** Times the informer listed the records (1 after start; more after a 410). */
  get lists(): number {
    return this.informer.lists;
  }

  /**
   * Creates a task's record; PAYLOAD_TOO_LARGE when a queued record would pass
   * 256 KiB (nothing written). `term` undefined: a follower's or a tool's submit
   * (unfenced). A record already there is read back from the server, not the
   * cache, and returned as `exists`: the caller compares spec hashes.
   */
  async create(body: TaskRecordBody, term?: number): Promise<CreateOutcome> {
    const object = encodeRecord(this.options.runner, body, term === undefined ? {} : { writeTerm: term });
    if (body.state === 'queued') assertSubmitSize(object);
    const name = object.metadata.name;
    try {
      const created = await this.options.client.request<RecordObject>({ method: 'POST', path: this.path, body: object, context: this.context('create', name) });
      return { type: 'created', record: this.written(decodeRecord(created)) };
    } catch (err) {
      if (!hasCode(err, 'ALREADY_EXISTS')) throw err;
    }
    const existing = await this.options.client.request<RecordObject>({ method: 'GET', path: `${this.path}/${name}`, context: this.context('get', name) });
    return { type: 'exists', record: decodeRecord(existing) };
  }

  /** Replaces the record's body by a PUT at the resourceVersion and uid of `record` (as read), stamped with the term; what it does not know is kept. */
  async update(record: TaskRecord, body: TaskRecordBody, options: WriteOptions): Promise<WriteOutcome> {
    const object = encodeRecord(this.options.runner, body, { writeTerm: options.term, previous: record, clearRequests: options.clearRequests });
    object.metadata.resourceVersion = record.resourceVersion;
    object.metadata.uid = record.uid;
    try {
      const written = await this.options.client.request<RecordObject>({ method: 'PUT', path: `${this.path}/${record.name}`, body: object, context: this.context('update', record.name) });
      return { type: 'written', record: this.written(decodeRecord(written)) };
    } catch (err) {
      const code = conflictCode(err);
      if (!code) throw err;
      return { type: 'conflict', code };
    }
  }

  /**
   * Deletes the record if it is still the one read: preconditions on its uid
   * and resourceVersion. The fencing policy judges a DELETE by the stored
   * object's term, so a record last written in an older term is written
   * (restamped) first by the caller.
   */
  async delete(record: TaskRecord): Promise<DeleteOutcome> {
    try {
      await this.options.client.request({
        method: 'DELETE',
        path: `${this.path}/${record.name}`,
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: record.uid, resourceVersion: record.resourceVersion } },
        context: this.context('delete', record.name),
      });
      return { type: 'deleted' };
    } catch (err) {
      const code = conflictCode(err);
      if (!code) throw err;
      return { type: 'conflict', code };
    }
  }

  /** Asks the leader to cancel the task (`rollcall.dev/cancel-requested: <reason>`). NOT_FOUND: no record. */
  requestCancel(taskId: string, reason: string, graceSeconds?: number): Promise<WriteOutcome> {
    return this.annotate(taskId, { [CANCEL_REQUESTED_ANNOTATION]: cancelRequestValue(reason, graceSeconds) });
  }

  /** Asks the leader for the next attempt of an ended task (`rollcall.dev/submit-requested`: the task as JSON). NOT_FOUND: no record. */
  requestSubmit(taskId: string, task: Task): Promise<WriteOutcome> {
    return this.annotate(taskId, { [SUBMIT_REQUESTED_ANNOTATION]: JSON.stringify(task) });
  }

  /** A merge patch of request annotations only: no resourceVersion (idempotent), no term (the policy lets it through unfenced), the body untouched. */
  private async annotate(taskId: string, annotations: Record<string, string>): Promise<WriteOutcome> {
    const name = this.nameOf(taskId);
    try {
      const patched = await this.options.client.request<RecordObject>({
        method: 'PATCH',
        path: `${this.path}/${name}`,
        body: { metadata: { annotations } },
        contentType: 'application/merge-patch+json',
        context: this.context('patch', name),
      });
      return { type: 'written', record: this.written(decodeRecord(patched)) };
    } catch (err) {
      if (hasCode(err, 'NOT_FOUND')) return { type: 'conflict', code: 'NOT_FOUND' };
      throw err;
    }
  }

  /** A write's answer into the cache, unless the cache holds a later version already; no handler is told (the informer's event of it is). */
  private written(record: TaskRecord): TaskRecord {
    const cached = this.records.get(record.name);
    if (!cached || !atOrAfter(cached.resourceVersion, record.resourceVersion)) this.records.set(record.name, record);
    return record;
  }

  private seen(object: RecordObject): void {
    const name = object.metadata.name;
    if (object.metadata.resourceVersion !== undefined) this.shownVersions.set(name, object.metadata.resourceVersion);
    const cached = this.records.get(name);
    // older than a write of this store's already in the cache: the informer has not come that far yet
    if (cached && !atOrAfter(object.metadata.resourceVersion ?? '0', cached.resourceVersion)) return;
    let record: TaskRecord;
    try {
      record = decodeRecord(object);
    } catch (err) {
      const error = err as RegistryError;
      this.unreadable.set(name, error);
      // not a delete: the task is not over, its record is unreadable until it is fixed or a newer runner leads
      this.records.delete(name);
      this.options.logger.warn({ err: error, record: name }, '[rollcall] [pod-runner] a task record cannot be read; left as it is');
      for (const h of [...this.listeners]) h.unreadable?.(name, error);
      return;
    }
    this.unreadable.delete(name);
    const previous = this.records.get(name);
    this.records.set(name, record);
    for (const h of [...this.listeners]) h.upsert?.(record, previous);
  }

  private gone(object: RecordObject): void {
    const name = object.metadata.name;
    const previous = this.records.get(name);
    // an older object of that name: the one cached is a later create of this store's, not yet shown by the informer
    if (previous && object.metadata.uid !== undefined && previous.uid !== object.metadata.uid) return;
    this.shownVersions.delete(name);
    this.unreadable.delete(name);
    this.records.delete(name);
    if (previous) for (const h of [...this.listeners]) h.delete?.(previous);
  }
}
