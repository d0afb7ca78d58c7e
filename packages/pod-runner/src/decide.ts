import type { Action, RecordWriteMeaning } from './actions.js';
import { EXPECTATION_TTL_MS, type Expectation } from './expectations.js';
import { podName } from './pod-build.js';
import { type EndChange, pendingTimedOut, queueTimedOut, readAttemptPod, runTimedOut, unknownTimedOut } from './pod-deadlines.js';
import { CANCELLED_ANNOTATION, FINALIZER, type Pod, TASK_ANNOTATION } from './pod.js';
import { nextAttempt } from './retry-policy.js';
import { type TaskRecord, type TaskRecordBody, WRITE_TERM_ANNOTATION } from './task-record.js';
import type { AttemptOutcome, TaskStatus } from './task.js';

/** Everything the leader's sync knows of one task when it decides: the informer caches and the term's memory, nothing read from a server. */
export interface Observed {
  /** The runner's name: the pods' names derive from it (pod-build.ts podName). */
  runner: string;
  /** This term's fencing token: an object last stamped by another term is re-stamped before this term deletes it. */
  term: number;
  record: TaskRecord;
  /**
   * A record write of this term is answered and the informer has not shown it yet (nor anything after it):
   * the record read is older than what this term decided, so decide waits for the informer's event.
   */
  writeUnseen?: boolean;
  /** This task's pods of every attempt, from the pod informer. */
  pods: readonly Pod[];
  /** A create this term issued and its informer has not shown yet (expectations.ts). */
  expecting?: Expectation;
  /** Whether admission (capacity, quota pause, submit order) lets this task's pod be created now. */
  admitted: boolean;
  /** The terminal status's hand-over to `onStatus` in this term: not started, in flight, acknowledged. */
  delivery: 'none' | 'pending' | 'acked';
  /** Whether a pod's log is stored as far as it must be before the pod is deleted (true when logs are not captured). */
  logsStored(podName: string): boolean;
  /** The pod's last events, fetched after a `fetchEvents` (an empty list when the fetch failed). */
  events?: { podName: string; lines: string[] };
  /** The API server's last refusal of this attempt's create for quota or rate, in this term: the queued status says so. */
  refusal?: string;
  /** What the previous decide of this term returned; absent at a term's start. */
  memo?: DecideMemo;
}

/** The term's memory of a task between syncs (never stored: a new term derives what it can from timestamps). */
export interface DecideMemo {
  /** The status last published: tells a gated pod's ungating (`ungatedAt`) and a pod vanished while live. */
  status?: TaskStatus;
  /** When this term first saw the pod in phase Unknown (used when the pod has no Ready transition time). Wall-clock ms. */
  unknownSince?: number;
}

/** What {@link decide} returns: the actions in order, the earliest deadline to sync again at (wall-clock ms), the memory to pass next time. */
export interface Decision {
  actions: Action[];
  wakeAt?: number;
  memo: DecideMemo;
}

/** The runner's settings decide reads. Milliseconds. */
export interface DecideSettings {
  /** Keep the pod of a task that did not succeed this long after its end. Default 0. */
  keepFailedPodsMs: number;
  /** A `done` record is deleted this long after its acknowledgement. Default 86400000 (24 h). */
  retainDoneMs: number;
  /** An unseen create is resolved with a GET after this long. Default 30000. */
  expectationTtlMs: number;
}

export const DEFAULT_DECIDE_SETTINGS: DecideSettings = { keepFailedPodsMs: 0, retainDoneMs: 86_400_000, expectationTtlMs: EXPECTATION_TTL_MS };

/** The attempt a pod runs: its task annotation's, else its name's last segment. */
export function podAttempt(pod: Pod): number {
  try {
    const attempt = (JSON.parse(pod.metadata.annotations?.[TASK_ANNOTATION] ?? '') as { attempt?: unknown }).attempt;
    if (typeof attempt === 'number') return attempt;
  } catch {
    // no readable annotation: the name says it
  }
  return Number(/-(\d+)$/.exec(pod.metadata.name)?.[1] ?? NaN);
}

const clean = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
const LIVE: ReadonlySet<string> = new Set(['pending', 'running', 'unknown']);

/** The status of a record's current attempt before any pod shows more: queued. */
export function queuedStatus(runner: string, body: TaskRecordBody): TaskStatus {
  const attempt = body.task.attempt ?? 1;
  return clean({
    taskId: body.task.taskId, taskType: body.task.taskType, tags: { ...body.task.tags }, attempt, phase: 'queued' as const, podName: podName(runner, body.task.taskId, attempt),
    template: body.template, submittedAt: body.submittedAt, previousAttempts: body.previousAttempts,
  });
}

/** A queued record in its retry's backoff. */
function backingOff(runner: string, body: TaskRecordBody): TaskStatus {
  return { ...queuedStatus(runner, body), reason: 'RetryBackoff', message: `attempt ${body.task.attempt ?? 1} at ${new Date(body.retryAt!).toISOString()}` };
}

/**
 * The leader's whole decision for one task, level-triggered: a pure function
 * of what is observed and the wall-clock `now` (ms). Every deadline derives
 * from the record's and the pods' own timestamps, so a new term resumes them.
 * An end is written before any release of its pod; only pods of an attempt
 * the record has ended or moved past are released or deleted.
 */
export function decide(o: Observed, now: number, settings: DecideSettings = DEFAULT_DECIDE_SETTINGS): Decision {
  // a stale record could decide again what is decided (a queue timeout after a wall-clock jump back would create its pod)
  if (o.writeUnseen) return { actions: [], memo: o.memo ?? {} };
  const body = o.record.body;
  const attempt = body.task.attempt ?? 1;
  const actions: Action[] = [];
  const wakes: number[] = [];
  const memo: DecideMemo = {};
  const base = queuedStatus(o.runner, body);
  const last = o.memo?.status?.attempt === attempt ? o.memo.status : undefined;
  let status: TaskStatus = body.state === 'queued' ? base : { ...base, ...body.status };

  /** Lets a pod go: its finalizer off (and the term's stamp on) first, its log stored, then the delete, not before `keepUntil`. */
  const letGo = (pod: Pod, keepUntil?: number) => {
    const name = pod.metadata.name;
    if (pod.metadata.finalizers?.includes(FINALIZER)) return void actions.push({ type: 'releasePod', pod });
    if (pod.metadata.deletionTimestamp) return;
    if (!o.logsStored(name)) return void actions.push({ type: 'followLogs', pod });
    if (keepUntil !== undefined && now < keepUntil) return void wakes.push(keepUntil);
    if (pod.metadata.annotations?.[WRITE_TERM_ANNOTATION] !== String(o.term)) return void actions.push({ type: 'releasePod', pod });
    // a cancelled task's pod goes with the grace its cancel asked for
    const graceSeconds = status.phase === 'cancelled' ? o.record.cancelGraceSeconds : undefined;
    actions.push({ type: 'deletePod', pod, ...(graceSeconds === undefined ? {} : { graceSeconds }) });
  };
  /** Writes the attempt's end: finished, or the next attempt when the snapshotted retry policy retries it. */
  const end = (change: EndChange, meaning: RecordWriteMeaning = 'end') => {
    const ended: TaskStatus = clean({ ...status, pendingCause: undefined, finishedAt: new Date(now).toISOString(), ...change });
    const previous = body.previousAttempts ?? [];
    const next = meaning === 'end' ? nextAttempt(body.retry, ended, previous.length) : { retry: false as const };
    if (!next.retry) return void actions.push({ type: 'writeRecord', meaning, body: { ...body, state: 'finished', status: ended } });
    const outcome = clean({ attempt, podName: ended.podName, phase: ended.phase, reason: ended.reason, message: ended.message, exitCode: ended.exitCode, finishedAt: ended.finishedAt }) as AttemptOutcome;
    const retried: TaskRecordBody = { ...body, task: { ...body.task, attempt: attempt + 1 }, previousAttempts: [...previous, outcome], retryAt: now + next.delayMs };
    delete retried.status;
    actions.push({ type: 'writeRecord', meaning: 'retry', body: retried });
    // what is published is the next attempt waiting, as the next decide says it: an attempt retried is no end
    status = backingOff(o.runner, retried);
  };

  for (const pod of o.pods) if (podAttempt(pod) < attempt) letGo(pod);
  // a create of an attempt the record has ended or moved past: settled now (a pod that landed is let go as an earlier attempt's)
  const moved = o.expecting && (body.state !== 'queued' || o.expecting.attempt !== attempt);
  if (moved) actions.push({ type: 'resolveCreate', podName: o.expecting!.podName });
  const current = o.pods.find((p) => podAttempt(p) === attempt);
  const timeouts = body.task.timeouts ?? {};

  // a v1 runner's or CLI's cancel mark on the pod is honoured as a request (for one release)
  const cancel = o.record.cancelRequested ?? current?.metadata.annotations?.[CANCELLED_ANNOTATION];
  if (body.state === 'queued') {
    if (cancel !== undefined) {
      end({ phase: 'cancelled', reason: 'Cancelled', message: cancel }, 'cancel');
    } else if (current) {
      const v = readAttemptPod(current, last ?? base, timeouts, now, o.memo?.unknownSince ?? now);
      status = clean({ ...base, ...last, ...v.change });
      if (v.kind === 'unknown') memo.unknownSince = o.memo?.unknownSince ?? now;
      if (v.kind === 'ended') end(v.change);
      else if (v.deadline !== undefined && now >= v.deadline) {
        if (v.kind === 'running') end(runTimedOut(timeouts));
        else if (v.kind === 'unknown') end(unknownTimedOut(status, timeouts));
        else if (o.events?.podName === current.metadata.name) end(pendingTimedOut(status, v.cause, o.events.lines));
        else actions.push({ type: 'fetchEvents', pod: current });
      } else {
        if (v.deadline !== undefined) wakes.push(v.deadline);
        if (v.kind === 'running') actions.push({ type: 'followLogs', pod: current });
      }
    } else if (o.expecting?.attempt === attempt) {
      const expires = o.expecting.since + settings.expectationTtlMs;
      if (now >= expires) actions.push({ type: 'resolveCreate', podName: o.expecting.podName });
      else wakes.push(expires);
    } else if (last && LIVE.has(last.phase)) {
      // seen live this term, now gone without a final state seen (the finalizer was taken off by someone else)
      end({ phase: 'lost', reason: 'Deleted', message: `pod ${base.podName} was deleted before it finished` });
    } else {
      const backoff = body.retryAt !== undefined && body.retryAt > now;
      const queueDeadline = timeouts.queue === undefined ? undefined : (body.retryAt ?? Date.parse(body.submittedAt)) + timeouts.queue;
      if (backoff) status = backingOff(o.runner, body);
      else if (o.refusal !== undefined) status = { ...base, message: `requeued: ${o.refusal}` };
      if (queueDeadline !== undefined && now >= queueDeadline && !backoff) end(queueTimedOut(status, timeouts), 'queueTimeout');
      else if (backoff) wakes.push(body.retryAt!);
      else {
        if (queueDeadline !== undefined) wakes.push(queueDeadline);
        if (o.admitted) actions.push({ type: 'createPod', attempt });
      }
    }
  } else {
    const requested = o.record.submitRequested;
    if (requested && (requested.attempt ?? 1) > attempt) {
      // a next attempt asked for over an ended task: queued again, from now
      const resubmitted: TaskRecordBody = { ...body, state: 'queued', task: requested, retryAt: now };
      for (const key of ['status', 'ackedAt', 'previousAttempts'] as const) delete resubmitted[key];
      actions.push({ type: 'writeRecord', meaning: 'resubmit', body: resubmitted, clearRequests: true });
    } else if (body.state === 'finished') {
      if (o.delivery === 'none') actions.push({ type: 'deliver', status });
      else if (o.delivery === 'acked') actions.push({ type: 'writeRecord', meaning: 'ack', body: { ...body, state: 'done', ackedAt: now } });
    } else {
      const expires = (body.ackedAt ?? now) + settings.retainDoneMs;
      // kept until its pods are gone (their deletes enqueue the task), so a pod never outlives the record of its end
      if (now < expires) wakes.push(expires);
      else if (o.pods.length === 0 && o.record.writeTerm !== o.term) actions.push({ type: 'writeRecord', meaning: 'restamp', body });
      else if (o.pods.length === 0) actions.push({ type: 'deleteRecord' });
    }
    if (current) {
      const failed = status.phase !== 'succeeded' && status.phase !== 'cancelled' && settings.keepFailedPodsMs > 0;
      letGo(current, failed ? Date.parse(status.finishedAt ?? body.submittedAt) + settings.keepFailedPodsMs : undefined);
    }
  }

  if (JSON.stringify(status) !== JSON.stringify(o.memo?.status)) actions.push({ type: 'publish', status });
  memo.status = status;
  return { actions, wakeAt: wakes.length ? Math.min(...wakes) : undefined, memo };
}
