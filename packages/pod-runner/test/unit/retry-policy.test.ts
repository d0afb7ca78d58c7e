import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '@rollcall/core';
import { assertRetryPolicy, nextAttempt, type RetryPolicy } from '../../src/retry-policy.js';

const policy: RetryPolicy = { maxAttempts: 3, backoffMs: 1000, maxBackoffMs: 3000, retryOn: { reasons: ['Evicted', 'NodeLost', 'Deleted'], exitCodes: { operator: 'In', values: [75] } } };

describe('nextAttempt: which outcomes retry, how often, after what backoff', () => {
  it('retries a listed reason with a doubling backoff, up to maxAttempts in all', () => {
    expect(nextAttempt(policy, { phase: 'lost', reason: 'Evicted' }, 0)).toEqual({ retry: true, delayMs: 1000 });
    expect(nextAttempt(policy, { phase: 'lost', reason: 'NodeLost' }, 1)).toEqual({ retry: true, delayMs: 2000 });
    expect(nextAttempt(policy, { phase: 'lost', reason: 'Evicted' }, 2)).toEqual({ retry: false });
  });

  it('caps the backoff at maxBackoffMs', () => {
    expect(nextAttempt({ ...policy, maxAttempts: 10 }, { phase: 'lost', reason: 'Deleted' }, 5)).toEqual({ retry: true, delayMs: 3000 });
  });

  it('retries the chosen exit codes of the task container only (In and NotIn)', () => {
    expect(nextAttempt(policy, { phase: 'failed', reason: 'Error', exitCode: 75 }, 0)).toEqual({ retry: true, delayMs: 1000 });
    expect(nextAttempt(policy, { phase: 'failed', reason: 'Error', exitCode: 1 }, 0)).toEqual({ retry: false });
    const notIn: RetryPolicy = { maxAttempts: 2, retryOn: { exitCodes: { operator: 'NotIn', values: [1] } } };
    expect(nextAttempt(notIn, { phase: 'failed', reason: 'Error', exitCode: 2 }, 0)).toEqual({ retry: true, delayMs: 10_000 });
    expect(nextAttempt(notIn, { phase: 'failed', reason: 'Error', exitCode: 1 }, 0)).toEqual({ retry: false });
    // an init container's failure carries no exit code of the task container
    expect(nextAttempt(notIn, { phase: 'failed', reason: 'InitContainerFailed' }, 0)).toEqual({ retry: false });
  });

  it('never retries success, a cancel, a timeout it does not name, or without a policy', () => {
    expect(nextAttempt(policy, { phase: 'succeeded', reason: 'Completed', exitCode: 0 }, 0)).toEqual({ retry: false });
    expect(nextAttempt({ ...policy, retryOn: { reasons: ['Deleted'] } }, { phase: 'cancelled', reason: 'Deleted' }, 0)).toEqual({ retry: false });
    expect(nextAttempt(policy, { phase: 'timed-out', reason: 'QueueTimeout' }, 0)).toEqual({ retry: false });
    expect(nextAttempt(policy, { phase: 'timed-out', reason: 'ImagePullBackOff' }, 0)).toEqual({ retry: false });
    expect(nextAttempt(undefined, { phase: 'lost', reason: 'Evicted' }, 0)).toEqual({ retry: false });
  });
});

describe('assertRetryPolicy: bad input is INVALID_CONFIG naming the key', () => {
  const cases: [unknown, string][] = [
    [null, 'templates[0].retry'],
    [{ maxAttempts: 0, retryOn: { reasons: ['Evicted'] } }, 'templates[0].retry.maxAttempts'],
    [{ maxAttempts: 101, retryOn: { reasons: ['Evicted'] } }, 'templates[0].retry.maxAttempts'],
    [{ maxAttempts: 2.5, retryOn: { reasons: ['Evicted'] } }, 'templates[0].retry.maxAttempts'],
    [{ maxAttempt: 2, retryOn: { reasons: ['Evicted'] } }, 'templates[0].retry.maxAttempt'],
    [{ maxAttempts: 2, backoffMs: -1, retryOn: { reasons: ['Evicted'] } }, 'templates[0].retry.backoffMs'],
    [{ maxAttempts: 2, backoffMs: 5000, maxBackoffMs: 1000, retryOn: { reasons: ['Evicted'] } }, 'templates[0].retry.maxBackoffMs'],
    [{ maxAttempts: 2 }, 'templates[0].retry.retryOn'],
    [{ maxAttempts: 2, retryOn: {} }, 'templates[0].retry.retryOn'],
    [{ maxAttempts: 2, retryOn: { reasons: ['Completed'] } }, 'templates[0].retry.retryOn.reasons'],
    [{ maxAttempts: 2, retryOn: { exitCodes: { operator: 'Is', values: [1] } } }, 'templates[0].retry.retryOn.exitCodes.operator'],
    [{ maxAttempts: 2, retryOn: { exitCodes: { operator: 'In', values: [0] } } }, 'templates[0].retry.retryOn.exitCodes.values'],
    [{ maxAttempts: 2, retryOn: { exitCodes: { operator: 'In', values: [] } } }, 'templates[0].retry.retryOn.exitCodes.values'],
    [{ maxAttempts: 2, retryOn: { onExitCodes: [1] } }, 'templates[0].retry.retryOn.onExitCodes'],
  ];
  for (const [input, key] of cases) {
    it(`rejects ${JSON.stringify(input)} at ${key}`, () => {
      let error: unknown;
      try {
        assertRetryPolicy(input, 'templates[0].retry');
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigurationError);
      expect(error).toMatchObject({ code: 'INVALID_CONFIG', key });
    });
  }

  it('accepts a valid policy', () => {
    expect(() => assertRetryPolicy(policy, 'templates[0].retry')).not.toThrow();
    expect(() => assertRetryPolicy({ maxAttempts: 1, retryOn: {} }, 'templates[0].retry')).not.toThrow();
  });
});
