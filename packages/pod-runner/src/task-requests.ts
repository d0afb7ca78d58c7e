import { type Clock, StoreConflictError } from '@rollcall/core';
import { BACKEND } from './errors.js';
import type { TaskRecord, TaskRecordBody } from './task-record.js';
import type { TaskStore } from './task-store.js';
import type { TestHooks } from './test-hooks.js';
import { retryThrottled } from './throttle-retry.js';

/**
 * What a submit did. `created`: the task's record is new (queued). `known`:
 * the record holds this attempt with the same spec, or a later attempt —
 * answered from it, nothing written. `next-requested`: a next attempt of an
 * ended task, asked of the leader on the record (`submit-requested`); its sync
 * writes it.
 */
export type SubmitAnswer = { type: 'created'; record: TaskRecord } | { type: 'known'; record: TaskRecord } | { type: 'next-requested'; record: TaskRecord };

/** What a cancel did: `requested` on a queued (or running) task; `ended` when its record says it ended already, nothing asked. */
export type CancelAnswer = { type: 'requested'; record: TaskRecord } | { type: 'ended'; record: TaskRecord };

/** A record deleted (retention) between the 409 and the request is created again: at most this many times. */
const MAX_ROUNDS = 3;

const attemptOf = (body: TaskRecordBody) => body.task.attempt ?? 1;

/**
 * A submit as any process makes it — the leader (with its term), a follower
 * or a tool (unfenced): a record create; on 409 the stored record decides.
 * The same attempt with another spec hash is CONFLICT, and so is a next
 * attempt while the current one has not ended. PAYLOAD_TOO_LARGE as the
 * store's create.
 */
export async function submitTask(store: TaskStore, body: TaskRecordBody, term?: number, hooks?: TestHooks): Promise<SubmitAnswer> {
  const taskId = body.task.taskId;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const outcome = await retryThrottled(store.clock, () => store.create(body, term));
    if (outcome.type === 'created') {
      await hooks?.afterWrite?.('submit', taskId);
      return outcome;
    }
    const record = outcome.record;
    const [asked, stored] = [attemptOf(body), attemptOf(record.body)];
    if (asked < stored || (asked === stored && record.body.specHash === body.specHash)) return { type: 'known', record };
    if (asked === stored) {
      throw new StoreConflictError('CONFLICT', `task ${JSON.stringify(taskId)} attempt ${asked} was submitted with another spec (hash ${record.body.specHash}, not ${body.specHash})`, { backend: BACKEND });
    }
    if (record.body.state === 'queued') {
      throw new StoreConflictError('CONFLICT', `task ${JSON.stringify(taskId)} attempt ${asked} was submitted while attempt ${stored} has not ended`, { backend: BACKEND });
    }
    const requested = await retryThrottled(store.clock, () => store.requestSubmit(taskId, body.task));
    if (requested.type === 'written') {
      await hooks?.afterWrite?.('submitRequested', taskId);
      return { type: 'next-requested', record: requested.record };
    }
    // deleted since the 409 (its retention ended): create it afresh
  }
  throw new StoreConflictError('CONFLICT', `task ${JSON.stringify(taskId)}'s record was deleted under each of ${MAX_ROUNDS} submits`, { backend: BACKEND });
}

/**
 * A cancel as any process makes it: the request annotation on the task's
 * record, unless the record (as the store holds it) ended already. Durable:
 * a queued task so marked never gets a pod, whichever runner leads next.
 * NOT_FOUND when the runner has no record of the task.
 */
export async function cancelTask(store: TaskStore, taskId: string, reason: string, graceSeconds?: number, hooks?: TestHooks): Promise<CancelAnswer> {
  const known = store.get(taskId);
  if (known && known.body.state !== 'queued') return { type: 'ended', record: known };
  const requested = await retryThrottled(store.clock, () => store.requestCancel(taskId, reason, graceSeconds));
  if (requested.type === 'conflict') throw new StoreConflictError('NOT_FOUND', `no record of task ${JSON.stringify(taskId)} in ${store.nameOf(taskId)}`, { backend: BACKEND });
  await hooks?.afterWrite?.('cancelRequested', taskId);
  if (requested.record.body.state !== 'queued') return { type: 'ended', record: requested.record };
  return { type: 'requested', record: requested.record };
}

/**
 * Resolves with the task's record once it has ended (finished or done), as
 * the store's informer sees it, or undefined after `waitMs` on `clock`, or
 * when the record is deleted first. What a cancel or a submit waits on.
 */
export function awaitEnded(store: TaskStore, taskId: string, waitMs: number, clock: Clock): Promise<TaskRecord | undefined> {
  const name = store.nameOf(taskId);
  const ended = (record: TaskRecord | undefined) => record !== undefined && record.body.state !== 'queued';
  const now = store.get(taskId);
  if (ended(now)) return Promise.resolve(now);
  return new Promise((resolve) => {
    const finish = (record: TaskRecord | undefined) => {
      unsubscribe();
      timer.cancel();
      resolve(record);
    };
    const unsubscribe = store.subscribe({
      upsert: (record) => void (record.name === name && ended(record) && finish(record)),
      delete: (record) => void (record.name === name && finish(undefined)),
    });
    const timer = clock.setTimeout(() => finish(undefined), waitMs);
  });
}
