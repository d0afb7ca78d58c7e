import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, PermissionError, RegistryError, StoreConflictError, UnavailableError } from '@rollcall/core';
import { classifyCreateError, createTaskPod, type CreatePodsApi } from '../../src/executor.js';
import { type Pod, SPEC_HASH_ANNOTATION } from '../../src/pod.js';

const pod = (hash = 'h1'): Pod => ({ metadata: { name: 'rollcall-t1-1', annotations: { [SPEC_HASH_ANNOTATION]: hash } }, spec: { containers: [{ name: 'main' }] } });
const timedOut = () => new UnavailableError('cannot reach the API server to create pods rollcall-t1-1 in namespace ns (ETIMEDOUT): timed out', { backend: 'kubernetes' });
const answered = (code: number, message = '') => new UnavailableError(`the API server answered ${code} to create pods rollcall-t1-1${message}`, { backend: 'kubernetes', cause: { code } });
const notFound = () => new StoreConflictError('NOT_FOUND', 'not found: get pods rollcall-t1-1', { backend: 'kubernetes' });

/**
 * The pod API as the executor sees it, in one namespace: `stored` is what the
 * API server holds; `create` stores the pod (unless told not to) and then
 * answers with `createAnswer` (a lost answer when it is an error).
 */
function api(options: { createAnswer?: Error; lands?: boolean; getAnswer?: Error; stored?: Pod }) {
  const calls: string[] = [];
  let stored = options.stored;
  const fake: CreatePodsApi = {
    namespace: 'ns',
    async create(p: Pod) {
      calls.push('create');
      if (options.lands !== false && !stored) stored = p;
      if (options.createAnswer) throw options.createAnswer;
      return p;
    },
    async get(name: string) {
      calls.push('get');
      if (options.getAnswer) throw options.getAnswer;
      if (!stored || stored.metadata.name !== name) throw notFound();
      return stored;
    },
  };
  return { fake, calls };
}

describe('classifyCreateError', () => {
  it('fails only on an answer that says nothing was stored; a timeout, a reset or a 5xx is uncertain', () => {
    expect(classifyCreateError(new InvalidArgumentError('the API server rejected create pods: spec.containers: Required value', { backend: 'kubernetes' }))).toBe('refused');
    expect(classifyCreateError(new InvalidArgumentError('too large', { backend: 'kubernetes', code: 'PAYLOAD_TOO_LARGE' }))).toBe('refused');
    expect(classifyCreateError(new PermissionError('PERMISSION_DENIED', 'permission denied: cannot create pods', { backend: 'kubernetes', cause: { code: 403, message: 'pods is forbidden' } }))).toBe('refused');
    expect(classifyCreateError(new PermissionError('PERMISSION_DENIED', 'exceeded quota', { backend: 'kubernetes', cause: { code: 403, message: 'exceeded quota: pods' } }))).toBe('requeue');
    expect(classifyCreateError(answered(429))).toBe('requeue');
    expect(classifyCreateError(new StoreConflictError('ALREADY_EXISTS', 'already exists', { backend: 'kubernetes' }))).toBe('exists');
    expect(classifyCreateError(new RegistryError('LEASE_LOST', 'fenced'))).toBe('fenced');
    for (const err of [timedOut(), answered(500), answered(503), answered(504), Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })]) expect(classifyCreateError(err)).toBe('uncertain');
  });
});

describe('createTaskPod', () => {
  it('adopts a pod whose create timed out after the API server stored it: no CreateFailed, no second create', async () => {
    const { fake, calls } = api({ createAnswer: timedOut() });
    const outcome = await createTaskPod(fake, pod(), 'h1', () => false);
    expect(outcome).toMatchObject({ outcome: 'adopted', pod: { metadata: { name: 'rollcall-t1-1' } } });
    expect(calls).toEqual(['create', 'get']);
  });

  it('requeues a create that got a 5xx and did not land, and a create whose read back gets no answer either', async () => {
    const lost = await createTaskPod(api({ createAnswer: answered(503), lands: false }).fake, pod(), 'h1', () => false);
    expect(lost).toMatchObject({ outcome: 'requeue', error: { code: 'UNAVAILABLE' } });
    const blind = await createTaskPod(api({ createAnswer: timedOut(), getAnswer: timedOut() }).fake, pod(), 'h1', () => false);
    expect(blind).toMatchObject({ outcome: 'requeue', error: { code: 'UNAVAILABLE' } });
    const reset = await createTaskPod(api({ createAnswer: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), lands: false }).fake, pod(), 'h1', () => false);
    expect(reset).toMatchObject({ outcome: 'requeue', error: { code: 'UNAVAILABLE' } });
  });

  it('fails with SpecConflict when the pod found by reading back has another spec', async () => {
    const outcome = await createTaskPod(api({ createAnswer: timedOut(), stored: pod('other') }).fake, pod(), 'h1', () => false);
    expect(outcome).toMatchObject({ outcome: 'failed', reason: 'SpecConflict' });
  });

  it('fails with CreateFailed on a 422 and reads nothing back', async () => {
    const { fake, calls } = api({ createAnswer: new InvalidArgumentError('the API server rejected create pods', { backend: 'kubernetes', cause: { code: 422 } }), lands: false });
    expect(await createTaskPod(fake, pod(), 'h1', () => false)).toMatchObject({ outcome: 'failed', reason: 'CreateFailed' });
    expect(calls).toEqual(['create']);
  });
});
