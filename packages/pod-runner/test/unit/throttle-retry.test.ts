import { UnavailableError } from '@rollcall/core';
import { ManualClock } from '@rollcall/core/testing';
import { describe, expect, it } from 'vitest';
import { isThrottled, retryThrottled, THROTTLE_TRIES } from '../../src/throttle-retry.js';

const throttled = () => new UnavailableError('the API server answered 429 to create configmaps x in namespace n: Too many requests', { backend: 'kubernetes', cause: { kind: 'Status', code: 429, reason: 'TooManyRequests' } });
const down = () => new UnavailableError('cannot reach the API server to create configmaps x in namespace n (ECONNREFUSED)', { backend: 'kubernetes' });

/** Runs `retryThrottled` on the manual clock, moving time only while it waits; the sends and the time each was made. */
async function run(answers: (() => unknown)[]) {
  const clock = new ManualClock(0);
  const sentAt: number[] = [];
  let i = 0;
  const done = retryThrottled(clock, async () => {
    sentAt.push(clock.now());
    const answer = answers[Math.min(i++, answers.length - 1)]!();
    if (answer instanceof Error) throw answer;
    return answer;
  }).then((value) => ({ value }), (error: unknown) => ({ error }));
  let settled: { value?: unknown; error?: unknown } | undefined;
  void done.then((s) => (settled = s));
  while (!settled) await clock.advance(50);
  return { ...settled, sentAt };
}

describe('retryThrottled', () => {
  it('sends a 429-refused request again after growing waits, and answers what the server finally says', async () => {
    const { value, sentAt } = await run([throttled, throttled, () => 'stored']);
    expect(value).toBe('stored');
    expect(sentAt).toHaveLength(3);
    // waits of about 200 then 400 ms (jitter shortens each by up to a fifth)
    expect(sentAt[1]! - sentAt[0]!).toBeGreaterThanOrEqual(150);
    expect(sentAt[1]! - sentAt[0]!).toBeLessThanOrEqual(250);
    expect(sentAt[2]! - sentAt[1]!).toBeGreaterThanOrEqual(300);
    expect(sentAt[2]! - sentAt[1]!).toBeLessThanOrEqual(450);
  });

  it(`gives the caller the refusal after ${THROTTLE_TRIES} tries; never sends again after another error`, async () => {
    const always = await run([throttled]);
    expect(always.sentAt).toHaveLength(THROTTLE_TRIES);
    expect(isThrottled(always.error)).toBe(true);
    const unreachable = await run([down, () => 'never']);
    expect(unreachable.sentAt).toHaveLength(1);
    expect(unreachable.error).toMatchObject({ code: 'UNAVAILABLE' });
    expect(isThrottled(unreachable.error)).toBe(false);
  });
});
