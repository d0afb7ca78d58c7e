import { silentLogger } from '@rollcall/core';
import { ManualClock } from '@rollcall/core/testing';
import { statusError, transportError } from '@rollcall/kube-client';
import { describe, expect, it } from 'vitest';
import { ActionApplier } from '../../src/apply-actions.js';
import { Expectations } from '../../src/expectations.js';
import { buildPod } from '../../src/pod-build.js';
import { classifyPodCreate } from '../../src/pod-create-answer.js';
import { FINALIZER, SPEC_HASH_ANNOTATION, type Pod, type PodTemplateSpec } from '../../src/pod.js';
import type { PodsApi } from '../../src/pods-api.js';
import { StatusDelivery } from '../../src/status-delivery.js';
import { TaskAdmission } from '../../src/task-admission.js';
import type { RunnerActivity } from '@rollcall/pod-runner-activity';
import type { TaskRecord, TaskRecordBody } from '../../src/task-record.js';
import type { TaskStore, WriteOptions } from '../../src/task-store.js';

/**
 * The applier's reading of a pod create's answer, with the errors the API
 * client maps from real HTTP answers (statusError, transportError). The pod
 * API and the store are in-memory stand-ins: what is judged is the applier's
 * bookkeeping (expectation, admission, the record write), not a server.
 */

const ctx = { verb: 'create', resource: 'pods', namespace: 'ns', name: 'rc-t1-1' };
const answer = (code: number, reason?: string, message = '') => statusError(code, { code, reason, message }, ctx);
const quota = () => answer(403, 'Forbidden', 'pods "rc-t1-1" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2');
const fenced = () => answer(403, 'Forbidden', 'admission webhook denied: stale runner term');
/** A fencing policy whose API server has no term Lease in its param cache yet (parameterNotFoundAction Deny): 422, not the pod's fault. */
const paramUnseen = () => answer(422, 'Invalid', "pods \"rc-t1-1\" is forbidden: ValidatingAdmissionPolicy 'rollcall-pod-runner-fencing' with binding 'rollcall-pod-runner-fencing' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction");
const reset = () => transportError(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), ctx);

const template: PodTemplateSpec = { spec: { containers: [{ name: 'main', image: 'registry.example/task:1' }] } };
const body = (change: Partial<TaskRecordBody> = {}): TaskRecordBody => ({ v: 2, state: 'queued', task: { taskId: 't1', taskType: 'report', attempt: 1 }, template: 'default', specHash: 'h', submittedAt: '2026-12-07T16:00:00.000Z', seq: 1, ...change });
const record = (b = body()): TaskRecord => ({ name: 'rc-task-t1', uid: 'u1', resourceVersion: '10', body: b });

function setup(createAnswer?: Error, stored?: Pod, conflict = false, over = false) {
  const clock = new ManualClock();
  const writes: { body: TaskRecordBody; options: WriteOptions }[] = [];
  const published: string[] = [];
  const handed: string[] = [];
  const followed: string[] = [];
  const emitted: RunnerActivity[] = [];
  const enqueued: [string, number | undefined][] = [];
  const created: Pod[] = [];
  const patched: { name: string; resourceVersion?: string }[] = [];
  const expectations = new Expectations();
  const admission = new TaskAdmission({ clock, total: 2, perType: {}, requeueDelayMs: 1000, jitter: 0 });
  const pods = {
    async create(pod: Pod, term?: number) {
      created.push({ ...pod, metadata: { ...pod.metadata, annotations: { ...pod.metadata.annotations, term: String(term) } } });
      if (createAnswer) throw createAnswer;
      return pod;
    },
    async get(name: string) {
      if (stored?.metadata.name === name) return stored;
      throw answer(404, 'NotFound');
    },
    // the API server's answer: the pod at the next resourceVersion; a stale one is a 409
    async patchMetadata(name: string, _metadata: unknown, options: { resourceVersion?: string }) {
      patched.push({ name, resourceVersion: options.resourceVersion });
      if (options.resourceVersion !== undefined && Number(options.resourceVersion) < 21) throw answer(409, 'Conflict');
      return { metadata: { name, resourceVersion: String(Number(options.resourceVersion ?? 0) + 1) } };
    },
  } as unknown as PodsApi;
  const store = {
    async update(r: TaskRecord, b: TaskRecordBody, options: WriteOptions) {
      if (conflict) return { type: 'conflict', code: 'CONFLICT' };
      writes.push({ body: b, options });
      return { type: 'written', record: { ...r, resourceVersion: '11', body: b } };
    },
  } as unknown as TaskStore;
  const applier = new ActionApplier({
    runner: 'rc', namespace: 'ns', term: 7, store, pods, expectations, admission, clock, logger: silentLogger,
    template: (name) => (name === 'default' ? { template } : undefined),
    enqueue: (id, delay) => void enqueued.push([id, delay]),
    delivery: new StatusDelivery({ onStatus: (status) => void handed.push(status.phase), clock, logger: silentLogger, schedule: (id, delay) => void enqueued.push([id, delay]) }),
    emit: (activity) => void emitted.push(activity),
    followLogs: (_record, pod) => void followed.push(pod.metadata.name),
    publish: (status) => void published.push(status.phase),
    fence: () => {
      if (over) throw new Error('term over');
    },
  });
  return { applier, clock, writes, enqueued, created, patched, expectations, admission, published, handed, followed, emitted };
}

const built = () => buildPod({ runner: 'rc', namespace: 'ns', task: body().task, template, templateName: 'default', submittedAt: body().submittedAt, fencingToken: 7 });

describe('classifyPodCreate', () => {
  it('names each answer: 409 exists, quota 403 and 429 requeue, 400/422/413 failed, no answer uncertain, any other refusal held', () => {
    expect(classifyPodCreate(answer(409, 'AlreadyExists'))).toBe('exists');
    expect(classifyPodCreate(quota())).toBe('requeue');
    expect(classifyPodCreate(answer(429, 'TooManyRequests'))).toBe('requeue');
    expect(classifyPodCreate(answer(400, 'BadRequest'))).toBe('failed');
    expect(classifyPodCreate(answer(422, 'Invalid'))).toBe('failed');
    expect(classifyPodCreate(answer(413))).toBe('failed');
    expect(classifyPodCreate(answer(500))).toBe('uncertain');
    expect(classifyPodCreate(answer(503))).toBe('uncertain');
    expect(classifyPodCreate(reset())).toBe('uncertain');
    expect(classifyPodCreate(new Error('not a registry error'))).toBe('uncertain');
    expect(classifyPodCreate(fenced())).toBe('held');
    expect(classifyPodCreate(answer(401))).toBe('held');
    expect(classifyPodCreate(answer(404, 'NotFound'))).toBe('held');
    expect(classifyPodCreate(answer(409, 'Conflict'))).toBe('held');
  });

  it("a fencing policy's 422 for want of a term Lease in its param cache is held, not CreateFailed: the pod is sound", () => {
    expect(classifyPodCreate(paramUnseen())).toBe('held');
    expect(classifyPodCreate(answer(422, 'Invalid', 'failed to configure binding: paramKind not yet synced to use for admission'))).toBe('held');
    expect(classifyPodCreate(answer(422, 'Invalid', 'Pod "rc-t1-1" is invalid: spec.containers[0].image: Required value'))).toBe('failed');
  });
});

describe('ActionApplier: a pod create', () => {
  it('created: stamped with the term, expected before it was sent, its slot held', async () => {
    const s = setup();
    await s.applier.apply(record(), [{ type: 'createPod', attempt: 1 }]);
    expect(s.created).toHaveLength(1);
    expect(s.created[0]!.metadata.annotations!.term).toBe('7');
    expect(s.created[0]!.metadata.annotations![SPEC_HASH_ANNOTATION]).toBe(built().specHash);
    expect(s.expectations.get('t1', [])).toMatchObject({ podName: 'rc-t1-1', attempt: 1 });
    expect(s.admission.occupied).toBe(1);
    expect(s.writes).toEqual([]);
  });

  it('409 with the same spec hash: adopted, the expectation kept, nothing written', async () => {
    const s = setup(answer(409, 'AlreadyExists'), built().pod);
    await s.applier.apply(record(), [{ type: 'createPod', attempt: 1 }]);
    expect(s.expectations.get('t1', [])).toBeDefined();
    expect(s.writes).toEqual([]);
  });

  it('409 with another spec hash: the attempt ends SpecConflict, stamped with the term', async () => {
    const other = built().pod;
    other.metadata.annotations![SPEC_HASH_ANNOTATION] = 'other';
    const s = setup(answer(409, 'AlreadyExists'), other);
    await s.applier.apply(record(), [{ type: 'createPod', attempt: 1 }]);
    expect(s.writes).toHaveLength(1);
    expect(s.writes[0]!.body).toMatchObject({ state: 'finished', status: { phase: 'failed', reason: 'SpecConflict', podName: 'rc-t1-1' } });
    expect(s.writes[0]!.options.term).toBe(7);
    expect(s.expectations.size).toBe(0);
  });

  for (const [name, err] of [['a quota 403', quota], ['a 429', () => answer(429, 'TooManyRequests')]] as const) {
    it(`${name}: requeued — nothing expected, the slot free, admission paused, the task synced after the pause`, async () => {
      const s = setup(err());
      s.admission.enqueue('t2', 'report', { joinedAt: 0, seq: 0 });
      await s.applier.apply(record(), [{ type: 'createPod', attempt: 1 }]);
      expect(s.expectations.size).toBe(0);
      expect(s.admission.occupied).toBe(0);
      expect(s.admission.pauseEndsInMs()).toBe(1000);
      expect(s.admission.recompute()).toEqual([]);
      expect(s.enqueued).toEqual([['t1', 1000]]);
      expect(s.writes).toEqual([]);
    });
  }

  it('a quota refusal puts the task back in line at its place at once: counted as waiting, and admitted when the pause ends ahead of a task that joined after it, before any sync of its own', async () => {
    const s = setup(quota());
    s.admission.enqueue('t2', 'report', { joinedAt: Date.parse(body().submittedAt) + 1, seq: 0 });
    s.admission.recompute();
    await s.applier.apply(record(), [{ type: 'createPod', attempt: 1 }]);
    expect(s.admission.waiting).toBe(2);
    expect(s.admission.recompute()).toEqual([]);
    await s.clock.advance(1000);
    expect(s.admission.recompute()).toEqual(['t1', 't2']);
  });

  for (const code of [400, 422]) {
    it(`${code}: the attempt ends CreateFailed with the server's message`, async () => {
      const s = setup(answer(code, 'Invalid', 'spec.containers[0].image: Required value'));
      await s.applier.apply(record(), [{ type: 'createPod', attempt: 1 }]);
      expect(s.writes).toHaveLength(1);
      expect(s.writes[0]!.body.state).toBe('finished');
      expect(s.writes[0]!.body.status).toMatchObject({ phase: 'failed', reason: 'CreateFailed' });
      expect(s.writes[0]!.body.status!.message).toContain('Required value');
      expect(s.expectations.size).toBe(0);
    });
  }

  for (const [name, err] of [['a reset', reset], ['a 503', () => answer(503)]] as const) {
    it(`${name}: uncertain — the expectation and the slot stay, nothing written, nothing created again`, async () => {
      const s = setup(err());
      await s.applier.apply(record(), [{ type: 'createPod', attempt: 1 }]);
      expect(s.expectations.get('t1', [])).toMatchObject({ podName: 'rc-t1-1' });
      expect(s.admission.occupied).toBe(1);
      expect(s.writes).toEqual([]);
      expect(s.created).toHaveLength(1);
    });
  }

  it('a fencing 403: held — rejects (the sync backs off), nothing expected, nothing written', async () => {
    const s = setup(fenced());
    await expect(s.applier.apply(record(), [{ type: 'createPod', attempt: 1 }])).rejects.toThrow(/stale runner term/);
    expect(s.expectations.size).toBe(0);
    expect(s.admission.occupied).toBe(0);
    expect(s.writes).toEqual([]);
  });

  it('a fencing 422 "no params found": held — rejects (the sync backs off), the attempt not ended, nothing expected', async () => {
    const s = setup(paramUnseen());
    await expect(s.applier.apply(record(), [{ type: 'createPod', attempt: 1 }])).rejects.toThrow(/no params found/);
    expect(s.expectations.size).toBe(0);
    expect(s.admission.occupied).toBe(0);
    expect(s.writes).toEqual([]);
  });
});

describe('ActionApplier: a pod release', () => {
  const kept = (resourceVersion: string): Pod => ({ ...built().pod, metadata: { ...built().pod.metadata, resourceVersion, finalizers: [FINALIZER] } });

  it('answered once: not sent again from a pod cache that has not shown it yet (a 409 every few tasks); sent again once the cache is at or past its answer', async () => {
    const s = setup();
    const name = built().pod.metadata.name;
    const ended = record(body({ state: 'finished' }));
    expect(await s.applier.apply(ended, [{ type: 'releasePod', pod: kept('21') }])).toBe(true);
    expect(s.patched).toEqual([{ name, resourceVersion: '21' }]);
    // the next sync (the acknowledgement, say) reads the pod as cached before the answer: nothing sent, nothing re-enqueued
    expect(await s.applier.apply(ended, [{ type: 'releasePod', pod: kept('21') }])).toBe(true);
    expect(s.patched).toHaveLength(1);
    expect(s.enqueued).toEqual([]);
    // the informer has shown the answer (or later): the expectation is met; a release decided then is sent
    expect(await s.applier.apply(ended, [{ type: 'releasePod', pod: kept('22') }])).toBe(true);
    expect(s.patched).toEqual([{ name, resourceVersion: '21' }, { name, resourceVersion: '22' }]);
  });

  it('a refused release (409: the pod changed) expects nothing: the next decision sends it at the new version', async () => {
    const s = setup();
    const ended = record(body({ state: 'finished' }));
    expect(await s.applier.apply(ended, [{ type: 'releasePod', pod: kept('20') }])).toBe(false);
    expect(s.enqueued).toEqual([['t1', undefined]]);
    expect(await s.applier.apply(ended, [{ type: 'releasePod', pod: kept('21') }])).toBe(true);
    expect(s.patched.map((p) => p.resourceVersion)).toEqual(['20', '21']);
  });

  it('a pod gone drops its release expectation', () => {
    const e = new Expectations();
    e.released('p', '30');
    const pod = { metadata: { name: 'p', resourceVersion: '29' } } as Pod;
    expect(e.releaseUnseen(pod)).toBe(true);
    e.podGone('p');
    expect(e.releaseUnseen(pod)).toBe(false);
  });
});

describe('ActionApplier: record writes', () => {
  it("a retry's next attempt is written with that attempt's spec hash, not the old one", async () => {
    const s = setup();
    const first = { ...body(), specHash: built().specHash };
    const retried = { ...first, task: { ...first.task, attempt: 2 }, retryAt: 5 };
    await s.applier.apply(record(first), [{ type: 'writeRecord', meaning: 'retry', body: retried }]);
    const second = buildPod({ runner: 'rc', namespace: 'ns', task: retried.task, template, templateName: 'default', submittedAt: first.submittedAt });
    expect(s.writes[0]!.body.specHash).toBe(second.specHash);
    expect(second.specHash).not.toBe(first.specHash);
    expect(s.writes[0]!.options.term).toBe(7);
  });

  it('a conflict writes nothing more: the task is enqueued, the next actions wait for a new read', async () => {
    const s = setup(undefined, undefined, true);
    await s.applier.apply(record(), [{ type: 'writeRecord', meaning: 'end', body: { ...body(), state: 'finished' } }, { type: 'createPod', attempt: 1 }]);
    expect(s.created).toEqual([]);
    expect(s.enqueued).toEqual([['t1', undefined]]);
  });

  it("a written end goes on to the decision's publish; a conflict publishes nothing", async () => {
    const ended = { ...body(), state: 'finished' as const };
    const status = { taskId: 't1', taskType: 'report', tags: {}, attempt: 1, phase: 'succeeded' as const, podName: 'rc-t1-1', template: 'default', submittedAt: body().submittedAt };
    const ok = setup();
    expect(await ok.applier.apply(record(), [{ type: 'writeRecord', meaning: 'end', body: ended }, { type: 'publish', status }])).toBe(true);
    expect(ok.published).toEqual(['succeeded']);
    const conflict = setup(undefined, undefined, true);
    expect(await conflict.applier.apply(record(), [{ type: 'writeRecord', meaning: 'end', body: ended }, { type: 'publish', status }])).toBe(false);
    expect(conflict.published).toEqual([]);
  });

  it('a term that is over writes no record: the fence throws before the request', async () => {
    const s = setup(undefined, undefined, false, true);
    await expect(s.applier.apply(record(), [{ type: 'writeRecord', meaning: 'end', body: { ...body(), state: 'finished' } }])).rejects.toThrow('term over');
    expect(s.writes).toEqual([]);
  });

  it('a quota refusal emits a requeue, a stored retry a retry; a deliver hands over through the delivery (acknowledged: a sync is asked for); followLogs goes to the capture', async () => {
    const refused = setup(quota());
    expect(await refused.applier.apply(record(), [{ type: 'createPod', attempt: 1 }])).toBe(true);
    expect(refused.emitted).toEqual([{ type: 'requeue', taskType: 'report', reason: 'QuotaExceeded' }]);

    const ok = setup();
    const retried = body({ task: { taskId: 't1', taskType: 'report', attempt: 2 }, retryAt: 5, previousAttempts: [{ attempt: 1, podName: 'rc-t1-1', phase: 'failed', reason: 'Error', finishedAt: '2026-12-07T16:01:00.000Z' }] });
    expect(await ok.applier.apply(record(), [{ type: 'writeRecord', meaning: 'retry', body: retried }])).toBe(true);
    expect(ok.emitted).toEqual([{ type: 'retry', taskType: 'report', reason: 'Error' }]);

    const status = { taskId: 't1', taskType: 'report', tags: {}, attempt: 1, phase: 'succeeded' as const, podName: 'rc-t1-1', template: 'default', submittedAt: '2026-12-07T16:00:00.000Z' };
    const ended = record(body({ state: 'finished', status }));
    expect(ok.applier.delivery('t1')).toBe('none');
    expect(await ok.applier.apply(ended, [{ type: 'deliver', status }])).toBe(true);
    expect(ok.handed).toEqual(['succeeded']);
    expect(ok.applier.delivery('t1')).toBe('acked');
    expect(ok.enqueued.at(-1)).toEqual(['t1', 0]);
    expect(await ok.applier.apply(ended, [{ type: 'writeRecord', meaning: 'ack', body: { ...ended.body, state: 'done', ackedAt: 9 } }])).toBe(true);
    expect(ok.applier.delivery('t1')).toBe('none');

    const pod = buildPod({ runner: 'rc', namespace: 'ns', task: { taskId: 't1', taskType: 'report', attempt: 1 }, template, templateName: 'default', submittedAt: '2026-12-07T16:00:00.000Z' }).pod;
    expect(await ok.applier.apply(record(), [{ type: 'followLogs', pod }])).toBe(true);
    expect(ok.followed).toEqual(['rc-t1-1']);
  });
});
