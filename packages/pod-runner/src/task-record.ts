import { createHash } from 'node:crypto';
import { CorruptRecordError, InvalidArgumentError, SchemaMismatchError } from '@rollcall/core';
import type { ObjectMeta } from '@rollcall/kube-client';
import { BACKEND } from './errors.js';
import { TASK_ID_LABEL, TASK_TYPE_LABEL } from './pod.js';
import type { RetryPolicy } from './retry-policy.js';
import type { AttemptOutcome, Task, TaskStatus } from './task.js';

/**
 * The task store's layout version, in every record's `v` and its ConfigMap's
 * `format` key. A runner reads every version up to its own; a newer one is
 * SCHEMA_MISMATCH naming the record. Additive fields keep the version, and a
 * read-modify-write keeps fields it does not know, so the previous minor
 * release reads newer records.
 */
export const TASK_RECORD_FORMAT = 2;

/** Label on every task record of a runner (its value: the runner's name): the record informer's selector. */
export const TASK_RECORD_LABEL = 'rollcall.dev/task-record';
/** Label with the record's state, so `kubectl get cm -l` can count queued tasks without decoding. */
export const TASK_STATE_LABEL = 'rollcall.dev/task-state';
/**
 * Annotation with the runner term (its fencing token) that wrote the object
 * last, on task records and on pods: the fencing policy compares it with the
 * runner's term Lease, and on DELETE reads it from the stored object.
 */
export const WRITE_TERM_ANNOTATION = 'rollcall.dev/write-term';
/** Annotation a follower or the CLI sets to ask the leader to cancel: its value is the reason. Unfenced. */
export const CANCEL_REQUESTED_ANNOTATION = 'rollcall.dev/cancel-requested';
/** Annotation a follower sets to ask for the next attempt of an ended task: a JSON `Task`. Unfenced. */
export const SUBMIT_REQUESTED_ANNOTATION = 'rollcall.dev/submit-requested';

/** Where a task is: waiting for (or running) its pod, ended and not yet acknowledged, or acknowledged. */
export type TaskRecordState = 'queued' | 'finished' | 'done';

/** What a task record's `record` data key holds (JSON). */
export interface TaskRecordBody {
  v: number;
  state: TaskRecordState;
  /** The task as submitted, timeouts merged; `attempt` is the one running or to run next. */
  task: Task;
  /** The template rule that builds its pod. */
  template: string;
  /** sha256 of the pod as built (pod-build.ts): a resubmit with another hash is a CONFLICT. */
  specHash: string;
  /** The template's retry policy as it was at submit: a template changed later does not change a task already accepted. */
  retry?: RetryPolicy;
  /** Wall-clock ISO time of the submit; with `seq` and the name it orders the queue. */
  submittedAt: string;
  /** Orders the submits of one process within one millisecond (submit-order.ts). */
  seq: number;
  /** A retry's backoff ends here (wall-clock ms): its attempt is not created before. */
  retryAt?: number;
  /** Earlier attempts the retry policy retried, oldest first (at most 100). */
  previousAttempts?: AttemptOutcome[];
  /** `finished` and `done`: the full terminal status of `task.attempt`. */
  status?: TaskStatus;
  /** `done`: when `onStatus` acknowledged it (wall-clock ms); retention counts from here. */
  ackedAt?: number;
}

/** A task record as read: its body and the object's identity, for conditional writes. */
export interface TaskRecord {
  /** The ConfigMap's name (record-name rule: deterministic from runner and task id). */
  name: string;
  uid: string;
  resourceVersion: string;
  body: TaskRecordBody;
  /** The term of the runner that wrote it last (`rollcall.dev/write-term`); absent for a follower's submit. */
  writeTerm?: number;
  /** A pending cancel request's reason. */
  cancelRequested?: string;
  /** The grace the cancel asked for the task's processes, whole seconds; absent: the pod's own. */
  cancelGraceSeconds?: number;
  /** A pending request for a next attempt. */
  submitRequested?: Task;
  /**
   * What the record's object carries that this runner does not write (other
   * labels, annotations and data keys, e.g. a newer minor version's): a PUT
   * built from this record keeps them. Absent when there is none.
   */
  kept?: KeptMetadata;
}

/** Labels, annotations and data keys of a record's object that are not the runner's own. */
export interface KeptMetadata {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  data?: Record<string, string>;
}

/** A task record as the API server holds it: a ConfigMap. */
export interface RecordObject {
  apiVersion: 'v1';
  kind: 'ConfigMap';
  metadata: ObjectMeta;
  data?: Record<string, string>;
}

/** The record's data keys: the layout version, and the body as JSON. */
export const RECORD_FORMAT_KEY = 'format';
export const RECORD_BODY_KEY = 'record';

/**
 * A submit whose record would hold more than this is refused
 * (PAYLOAD_TOO_LARGE). Its end then adds at most the task's tags again, the
 * termination message and its result (4 KiB each, the kubelet's bound; 24 KiB
 * escaped at worst), a message, 5 events and 99 earlier attempts, their free
 * text cut to {@link FREE_TEXT_MAX_BYTES}: about 800 KiB at the very worst,
 * under the API server's 1 MiB (task-record.test.ts builds it). Bytes of data
 * keys and values, as the API server counts them.
 */
export const RECORD_SUBMIT_MAX_BYTES = 262_144;

/** A message, event or earlier attempt's message longer than this, as stored (JSON-escaped, UTF-8), is cut, ending in `…`. Bytes. */
export const FREE_TEXT_MAX_BYTES = 1024;

/**
 * The record of a task: `<runner>-task-<slug>-<hash8>`, the slug the task id
 * lower-cased with `_` and `.` as `-` (a DNS subdomain; at most 63 characters,
 * the id's bound), the hash over runner and id keeping ids that differ only
 * in case or `_`/`.`/`-` apart. Deterministic, so a submit in any process
 * names the same object, and at most 30 + 6 + 63 + 9 = 108 characters.
 */
export function recordName(runner: string, taskId: string): string {
  const slug = taskId.toLowerCase().replace(/[_.]/g, '-');
  const hash = createHash('sha256').update(`${runner}\u0000${taskId}`).digest('hex').slice(0, 8);
  return `${runner}-task-${slug}-${hash}`;
}

/**
 * Submit order, the queue's across processes and restarts: `submittedAt`
 * (wall-clock ms), then `seq` (a process's submits within one millisecond),
 * then the record name. Not the order the API server lists (by name).
 */
export function compareSubmitOrder(a: TaskRecord, b: TaskRecord): number {
  return Date.parse(a.body.submittedAt) - Date.parse(b.body.submittedAt) || a.body.seq - b.body.seq || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** The record informer's label selector: every record of one runner. */
export const recordSelector = (runner: string) => `${TASK_RECORD_LABEL}=${runner}`;

/** Bytes of a ConfigMap's data keys and values (UTF-8): what the API server's 1 MiB bound counts. */
export function dataBytes(data: Record<string, string> | undefined): number {
  let bytes = 0;
  for (const [key, value] of Object.entries(data ?? {})) bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
  return bytes;
}

const KNOWN_LABELS = new Set([TASK_RECORD_LABEL, TASK_STATE_LABEL, TASK_ID_LABEL, TASK_TYPE_LABEL]);
const KNOWN_ANNOTATIONS = new Set([WRITE_TERM_ANNOTATION, CANCEL_REQUESTED_ANNOTATION, SUBMIT_REQUESTED_ANNOTATION]);
const KNOWN_DATA = new Set([RECORD_FORMAT_KEY, RECORD_BODY_KEY]);
const KNOWN_BODY = new Set(['v', 'state', 'task', 'template', 'specHash', 'retry', 'submittedAt', 'seq', 'retryAt', 'previousAttempts', 'status', 'ackedAt']);

/** Bytes a string takes inside the stored JSON: escapes (a control character is 6) and UTF-8 counted. */
const storedBytes = (text: string) => Buffer.byteLength(JSON.stringify(text)) - 2;

function cut(text: string): string {
  if (storedBytes(text) <= FREE_TEXT_MAX_BYTES) return text;
  // the longest prefix that fits with the 3-byte `…`
  let lo = 0;
  let hi = Math.min(text.length, FREE_TEXT_MAX_BYTES);
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (storedBytes(text.slice(0, mid)) + 3 <= FREE_TEXT_MAX_BYTES) lo = mid;
    else hi = mid - 1;
  }
  return `${text.slice(0, lo)}…`;
}

const cutAttempts = (attempts: AttemptOutcome[]) => attempts.map((a) => (a.message === undefined ? a : { ...a, message: cut(a.message) }));

/** The body with its free text bounded: schedulers' and controllers' messages have no bound of their own. */
function bounded(body: TaskRecordBody): TaskRecordBody {
  const out: TaskRecordBody = { ...body };
  if (body.previousAttempts) out.previousAttempts = cutAttempts(body.previousAttempts);
  if (body.status) {
    const status: TaskStatus = { ...body.status };
    if (status.message !== undefined) status.message = cut(status.message);
    if (status.podEvents) status.podEvents = status.podEvents.map(cut);
    if (status.previousAttempts) status.previousAttempts = cutAttempts(status.previousAttempts);
    out.status = status;
  }
  return out;
}

const without = (map: Record<string, string> | undefined, known: Set<string>) => {
  const rest = Object.fromEntries(Object.entries(map ?? {}).filter(([k]) => !known.has(k)));
  return Object.keys(rest).length > 0 ? rest : undefined;
};

/** What {@link encodeRecord} writes beside the body. */
export interface EncodeOptions {
  /** Stamped as {@link WRITE_TERM_ANNOTATION}; absent for a follower's submit (unfenced). */
  writeTerm?: number;
  /** The record as read, for an update: its name, what it keeps, its requests (kept unless `clearRequests`), and its body's unknown fields. */
  previous?: TaskRecord;
  /** Drop the cancel and next-attempt requests: the write decided them. */
  clearRequests?: boolean;
}

/**
 * A record's ConfigMap: name, labels (runner, state, task id and type),
 * annotations (term, requests) and data (`format`, `record`). Free text is
 * cut to {@link FREE_TEXT_MAX_BYTES}; fields of `previous`'s body this runner
 * does not know are kept, as are its other labels, annotations and data.
 * `metadata.resourceVersion` is the caller's (the store sets it on a PUT).
 */
export function encodeRecord(runner: string, body: TaskRecordBody, options: EncodeOptions = {}): RecordObject {
  const { previous } = options;
  const unknown = previous ? Object.fromEntries(Object.entries(previous.body).filter(([k]) => !(k in body) && !KNOWN_BODY.has(k))) : {};
  const stored = bounded({ ...unknown, ...body } as TaskRecordBody);
  const annotations: Record<string, string> = { ...previous?.kept?.annotations };
  if (options.writeTerm !== undefined) annotations[WRITE_TERM_ANNOTATION] = String(options.writeTerm);
  if (previous && !options.clearRequests) {
    if (previous.cancelRequested !== undefined) annotations[CANCEL_REQUESTED_ANNOTATION] = cancelRequestValue(previous.cancelRequested, previous.cancelGraceSeconds);
    if (previous.submitRequested !== undefined) annotations[SUBMIT_REQUESTED_ANNOTATION] = JSON.stringify(previous.submitRequested);
  }
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: previous?.name ?? recordName(runner, body.task.taskId),
      labels: { ...previous?.kept?.labels, [TASK_RECORD_LABEL]: runner, [TASK_STATE_LABEL]: body.state, [TASK_ID_LABEL]: body.task.taskId, [TASK_TYPE_LABEL]: body.task.taskType },
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
    },
    data: { ...previous?.kept?.data, [RECORD_FORMAT_KEY]: String(TASK_RECORD_FORMAT), [RECORD_BODY_KEY]: JSON.stringify(stored) },
  };
}

/** Refuses a submit whose record would pass {@link RECORD_SUBMIT_MAX_BYTES} (PAYLOAD_TOO_LARGE, naming its size); nothing is written. */
export function assertSubmitSize(object: RecordObject): void {
  const bytes = dataBytes(object.data);
  if (bytes <= RECORD_SUBMIT_MAX_BYTES) return;
  const taskId = object.metadata.labels?.[TASK_ID_LABEL];
  throw new InvalidArgumentError(`task ${JSON.stringify(taskId)} makes a record of ${bytes} bytes, over the ${RECORD_SUBMIT_MAX_BYTES} a submit may take (its command, args, env, tags, labels and annotations): not accepted`, { backend: BACKEND, code: 'PAYLOAD_TOO_LARGE' });
}

function newer(name: string, version: unknown): SchemaMismatchError {
  return new SchemaMismatchError(`task record ${name} has format ${JSON.stringify(version)}, newer than this runner's ${TASK_RECORD_FORMAT}: upgrade the runner (an older one must not rewrite it)`, { backend: BACKEND });
}

const STATES = new Set<TaskRecordState>(['queued', 'finished', 'done']);

/**
 * A record from its ConfigMap. Every version up to {@link TASK_RECORD_FORMAT}
 * is read; a newer `format` or `v` is SCHEMA_MISMATCH naming the record,
 * anything else unreadable CORRUPT_RECORD naming it. Unknown body fields stay
 * in `body`; the object's other labels, annotations and data in `kept`.
 */
export function decodeRecord(object: RecordObject): TaskRecord {
  const name = object.metadata.name;
  const corrupt = (what: string, cause?: unknown) => new CorruptRecordError(name, `task record ${name} ${what}`, { backend: BACKEND, ...(cause ? { cause } : {}) });
  const format = Number(object.data?.[RECORD_FORMAT_KEY]);
  if (!Number.isInteger(format) || format < 2) throw corrupt(`has format ${JSON.stringify(object.data?.[RECORD_FORMAT_KEY])}, not a version number from 2`);
  if (format > TASK_RECORD_FORMAT) throw newer(name, object.data?.[RECORD_FORMAT_KEY]);
  let body: TaskRecordBody;
  try {
    body = JSON.parse(object.data?.[RECORD_BODY_KEY] ?? '') as TaskRecordBody;
  } catch (err) {
    throw corrupt('holds no JSON body', err);
  }
  if (!body || typeof body !== 'object' || !Number.isInteger(body.v) || body.v < 2) throw corrupt('has no format version in its body');
  if (body.v > TASK_RECORD_FORMAT) throw newer(name, body.v);
  if (!STATES.has(body.state) || typeof body.task?.taskId !== 'string' || typeof body.task.taskType !== 'string' || typeof body.submittedAt !== 'string' || typeof body.specHash !== 'string') {
    throw corrupt('is not a queued, finished or done task (state, task, submittedAt, specHash)');
  }
  if (body.state !== 'queued' && typeof body.status?.phase !== 'string') throw corrupt(`is ${body.state} without a terminal status`);
  if (body.state === 'done' && typeof body.ackedAt !== 'number') throw corrupt('is done without ackedAt');
  const annotations = object.metadata.annotations ?? {};
  const term = annotations[WRITE_TERM_ANNOTATION];
  const record: TaskRecord = { name, uid: object.metadata.uid ?? '', resourceVersion: object.metadata.resourceVersion ?? '', body };
  if (term !== undefined) {
    if (!/^\d+$/.test(term)) throw corrupt(`has write-term ${JSON.stringify(term)}, not a whole number`);
    record.writeTerm = Number(term);
  }
  const cancel = annotations[CANCEL_REQUESTED_ANNOTATION];
  if (cancel !== undefined) Object.assign(record, readCancelRequest(cancel));
  const submit = annotations[SUBMIT_REQUESTED_ANNOTATION];
  if (submit !== undefined) {
    try {
      record.submitRequested = JSON.parse(submit) as Task;
    } catch (err) {
      throw corrupt('has a next-attempt request that is not JSON', err);
    }
  }
  const kept: KeptMetadata = {};
  const labels = without(object.metadata.labels, KNOWN_LABELS);
  const others = without(annotations, KNOWN_ANNOTATIONS);
  const data = without(object.data, KNOWN_DATA);
  if (labels) kept.labels = labels;
  if (others) kept.annotations = others;
  if (data) kept.data = data;
  if (labels || others || data) record.kept = kept;
  return record;
}

/** The `cancel-requested` annotation's value: the reason alone, or with a grace `{"reason", "graceSeconds"}` as JSON. */
export function cancelRequestValue(reason: string, graceSeconds?: number): string {
  return graceSeconds === undefined ? reason : JSON.stringify({ reason, graceSeconds });
}

/** A `cancel-requested` value read back: a reason (any text), or the JSON {@link cancelRequestValue} writes with a grace. */
function readCancelRequest(value: string): Pick<TaskRecord, 'cancelRequested' | 'cancelGraceSeconds'> {
  if (value.startsWith('{"reason"')) {
    try {
      const { reason, graceSeconds } = JSON.parse(value) as { reason?: unknown; graceSeconds?: unknown };
      if (typeof reason === 'string' && Number.isInteger(graceSeconds) && (graceSeconds as number) >= 0) return { cancelRequested: reason, cancelGraceSeconds: graceSeconds as number };
    } catch {
      // a reason that only looks like JSON: it is the reason
    }
  }
  return { cancelRequested: value };
}
