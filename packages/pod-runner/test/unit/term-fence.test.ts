import { LeaseLostError } from '@rollcall/core';
import { ManualClock } from '@rollcall/core/testing';
import { describe, expect, it } from 'vitest';
import { probeFence, type FenceMode, type ProbeAnswer } from '../../src/term-fence.js';

/** Scripted dry-run answers; each call is logged with the clock's time. The last answer repeats. */
function probes(clock: ManualClock, control: ProbeAnswer[], term: ProbeAnswer[], stillCurrent?: () => Promise<void>) {
  const calls: string[] = [];
  const next = (name: string, answers: ProbeAnswer[]) => async () => {
    calls.push(`${name}@${clock.now()}`);
    return answers.length > 1 ? answers.shift()! : answers[0]!;
  };
  return { calls, probes: { control: next('control', control), term: next('term', term), ...(stillCurrent ? { stillCurrent } : {}) } };
}

/** Starts the loop and records how it settled, without awaiting it. */
function start(run: Promise<FenceMode>) {
  const outcome: { mode?: FenceMode; error?: unknown } = {};
  run.then((mode) => (outcome.mode = mode), (error: unknown) => (outcome.error = error));
  return outcome;
}

const exact = { initialMs: 50, maxMs: 200, timeoutMs: 1000, random: () => 0 };

describe('probeFence: waiting, on the injected clock, for the API server to show a new term to its policy', () => {
  it('the probe waits until the old term is refused and the new one accepted: control until certain, then the term, each after a backoff delay', async () => {
    const clock = new ManualClock();
    const { calls, probes: p } = probes(clock, ['unseen', 'unseen', 'refused'], ['refused', 'refused', 'refused', 'accepted']);
    const outcome = start(probeFence(p, clock, exact));
    await clock.advance(149);
    expect(outcome).toEqual({});
    expect(calls).toEqual(['control@0', 'control@50']);
    await clock.advance(1);
    // The control is certain at 150; the backoff starts again at 50 ms for the term: 150, 200, 300, 500 (capped at 200 ms).
    await clock.advance(349);
    expect(outcome).toEqual({});
    await clock.advance(1);
    expect(calls).toEqual(['control@0', 'control@50', 'control@150', 'term@150', 'term@200', 'term@300', 'term@500']);
    expect(outcome).toEqual({ mode: 'server' });
  });

  it('a control dry run accepted means no policy judges the namespace: client, at once, with no term probe', async () => {
    const clock = new ManualClock();
    const { calls, probes: p } = probes(clock, ['accepted'], ['accepted']);
    const outcome = start(probeFence(p, clock, exact));
    await clock.advance(0);
    expect(outcome).toEqual({ mode: 'client' });
    expect(calls).toEqual(['control@0']);
  });

  it('a term the server never shows fails UNAVAILABLE at the timeout, not before', async () => {
    const clock = new ManualClock();
    const { calls, probes: p } = probes(clock, ['refused'], ['refused']);
    const outcome = start(probeFence(p, clock, exact));
    await clock.advance(999);
    expect(outcome).toEqual({});
    await clock.advance(1);
    expect(outcome.error).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('within 1000 ms') });
    // The backoff's 200 ms cap, shortened to the deadline for the last dry run: none past it.
    expect(calls.filter((c) => c.startsWith('term'))).toEqual(['term@0', 'term@50', 'term@150', 'term@350', 'term@550', 'term@750', 'term@950', 'term@1000']);
  });

  it('a later term in the Lease ends the wait with LEASE_LOST at the next refusal', async () => {
    const clock = new ManualClock();
    let lost = false;
    const { probes: p } = probes(clock, ['refused'], ['refused'], async () => {
      if (lost) throw new LeaseLostError('taken', 'term 3 is over: the Lease holds term 4');
    });
    const outcome = start(probeFence(p, clock, exact));
    await clock.advance(100);
    expect(outcome).toEqual({});
    lost = true;
    await clock.advance(100);
    expect(outcome.error).toMatchObject({ code: 'LEASE_LOST', reason: 'taken' });
  });
});
