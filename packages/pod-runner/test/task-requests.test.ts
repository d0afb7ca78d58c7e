import { waitFor } from '@rollcall/conformance';
import { hasCode, type Logger, systemClock } from '@rollcall/core';
import { ApiClient, userAgent } from '@rollcall/kube-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskRecordBody } from '../src/task-record.js';
import { awaitEnded, cancelTask, submitTask } from '../src/task-requests.js';
import { TaskStore } from '../src/task-store.js';
import type { TaskStatus } from '../src/task.js';
import { admin } from './runner-env.js';

/**
 * Submits and cancels as any process makes them (a follower, `rollcall tasks`),
 * on the real API server: a "leader" store in the test writes the ends a
 * runner's sync would, and the requests are seen there through its informer.
 */

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
let namespace: string;
const closers: (() => void)[] = [];

async function pair(runner: string): Promise<{ leader: TaskStore; follower: TaskStore }> {
  const open = async () => {
    const client = new ApiClient(admin.kc, 10_000, userAgent('task-requests-test'));
    const store = new TaskStore({ client, namespace, runner, logger: quiet });
    closers.push(() => store.close(), () => client.close());
    await store.start();
    return store;
  };
  return { leader: await open(), follower: await open() };
}

const body = (taskId: string, change: Partial<TaskRecordBody> = {}): TaskRecordBody => ({ v: 2, state: 'queued', task: { taskId, taskType: 'report', attempt: 1 }, template: 'default', specHash: 'h1', submittedAt: '2026-12-07T16:00:00.000Z', seq: 1, ...change });
const ended = (taskId: string, phase: TaskStatus['phase'], attempt = 1): TaskStatus => ({ taskId, taskType: 'report', tags: {}, attempt, phase, podName: `p-${attempt}`, template: 'default', submittedAt: '2026-12-07T16:00:00.000Z' });

beforeAll(async () => {
  namespace = await admin.namespace('task-requests');
});

afterAll(() => {
  for (const close of closers.reverse()) close();
});

describe('task requests, as any process makes them', () => {
  it('a submit creates the record once: the same attempt and spec again is known, another spec CONFLICT, an earlier attempt known', async () => {
    const { follower } = await pair('submits');
    const first = await submitTask(follower, body('s1'));
    expect(first.type).toBe('created');
    expect(first.record.writeTerm).toBeUndefined();
    expect(await submitTask(follower, body('s1'))).toEqual({ type: 'known', record: first.record });
    const conflict = await submitTask(follower, body('s1', { specHash: 'h2' })).catch((err: unknown) => err);
    expect(hasCode(conflict, 'CONFLICT')).toBe(true);
    // a next attempt while the current one runs: CONFLICT, nothing asked
    const early = await submitTask(follower, body('s1', { task: { taskId: 's1', taskType: 'report', attempt: 2 } })).catch((err: unknown) => err);
    expect(hasCode(early, 'CONFLICT')).toBe(true);
    expect((await admin.core.readNamespacedConfigMap({ namespace, name: first.record.name })).metadata!.resourceVersion).toBe(first.record.resourceVersion);
  });

  it('a next attempt of an ended task is asked on its record, the body untouched; an earlier attempt is answered from it', async () => {
    const { leader, follower } = await pair('resubmits');
    const { record } = await submitTask(follower, body('r1'));
    const finished = await leader.update(record, { ...record.body, state: 'finished', status: ended('r1', 'failed') }, { term: 1 });
    expect(finished.type).toBe('written');
    await waitFor(() => follower.get('r1')?.body.state === 'finished' || undefined, 10_000, 'the follower to see the end');
    const next = { taskId: 'r1', taskType: 'report', attempt: 2 };
    const answer = await submitTask(follower, body('r1', { task: next, specHash: 'h-2' }));
    expect(answer.type).toBe('next-requested');
    expect(answer.record.submitRequested).toEqual(next);
    expect(answer.record.body).toEqual((finished as { record: { body: unknown } }).record.body);
    await waitFor(() => leader.get('r1')?.submitRequested, 10_000, 'the leader to see the request');
    expect((await submitTask(follower, body('r1', { task: { ...next, attempt: 1 } }))).type).toBe('known');
  });

  it('a cancel of a queued task is stored on its record and waits for the end the leader writes; an ended one is not asked', async () => {
    const { leader, follower } = await pair('cancels');
    const { record } = await submitTask(follower, body('c1'));
    await waitFor(() => follower.get('c1'), 10_000, 'the follower to see its submit');
    const asked = await cancelTask(follower, 'c1', 'operator asked');
    expect(asked.type).toBe('requested');
    expect(asked.record.cancelRequested).toBe('operator asked');
    expect(asked.record.body).toEqual(record.body);
    const waiting = awaitEnded(follower, 'c1', 20_000, systemClock);
    // the leader's sync: it sees the request and writes the cancel, clearing it
    const seen = await waitFor(() => (leader.get('c1')?.cancelRequested ? leader.get('c1') : undefined), 10_000, 'the leader to see the cancel request');
    const status = { ...ended('c1', 'cancelled'), reason: 'Cancelled', message: seen.cancelRequested! };
    expect((await leader.update(seen, { ...seen.body, state: 'finished', status }, { term: 1, clearRequests: true })).type).toBe('written');
    const end = await waiting;
    expect(end?.body.status).toMatchObject({ phase: 'cancelled', message: 'operator asked' });
    expect(end?.cancelRequested).toBeUndefined();
    // ended: nothing asked again
    const again = await cancelTask(follower, 'c1', 'twice');
    expect(again.type).toBe('ended');
    expect((await admin.core.readNamespacedConfigMap({ namespace, name: record.name })).metadata!.annotations?.['rollcall.dev/cancel-requested']).toBeUndefined();
  });

  it('a cancel of a task with no record is NOT_FOUND; a wait with no end answers undefined after its bound', async () => {
    const { follower } = await pair('absent');
    const err = await cancelTask(follower, 'nope', 'x').catch((e: unknown) => e);
    expect(hasCode(err, 'NOT_FOUND')).toBe(true);
    await submitTask(follower, body('slow'));
    await waitFor(() => follower.get('slow'), 10_000, 'the follower to see its submit');
    expect(await awaitEnded(follower, 'slow', 200, systemClock)).toBeUndefined();
  });
});
