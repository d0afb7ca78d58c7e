import { describe, expect, it } from 'vitest';
import type { Action } from '../../src/actions.js';
import { decide, podAttempt } from '../../src/decide.js';
import { type DecideFn, type Invariant, runSequence } from './model/cluster-model.js';
import { Rng } from './model/random.js';

// decide over a fake cluster (model/cluster-model.ts): a fake API server with resourceVersions and the
// fence, informer lag, uncertain creates, quota refusals, every kubelet ending, cancels, resubmits, clock
// jumps, term changes and kills, all drawn from a seed. A failure names its seed; replay it with
// ROLLCALL_MODEL_SEED=<seed> ROLLCALL_MODEL_SEQUENCES=1.
const SEQUENCES = Number(process.env.ROLLCALL_MODEL_SEQUENCES ?? 1000);
const STEPS = 200;
const BASE_SEED = Number(process.env.ROLLCALL_MODEL_SEED ?? 35_000);
/** Sequences a planted bug gets to show itself in (each is found well within: see the seeds printed). */
const PLANTED_BUDGET = 300;

/** Runs `count` sequences from `first`: the first one that breaks an invariant (`only` that one), with its seed. */
function explore(decideFn: DecideFn, count: number, first = BASE_SEED, only?: Invariant) {
  for (let seed = first; seed < first + count; seed++) {
    const model = runSequence(new Rng(seed), decideFn, STEPS);
    const found = model.ledger.violations.filter((v) => only === undefined || v.invariant === only);
    if (found.length > 0) return { seed, violations: found, log: model.log };
  }
  return undefined;
}

function describeFailure(failure: NonNullable<ReturnType<typeof explore>>): string {
  const { seed, violations, log } = failure;
  return `seed ${seed} (replay: ROLLCALL_MODEL_SEED=${seed} ROLLCALL_MODEL_SEQUENCES=1): ${violations.map((v) => `${v.invariant}: ${v.detail}`).join('; ')}\nlast events: ${log.slice(-25).join(' | ')}`;
}

const isEnd = (a: Action) => a.type === 'writeRecord' && (a.meaning === 'end' || a.meaning === 'retry' || a.meaning === 'cancel');
const attemptOf = (o: Parameters<DecideFn>[0]) => o.record.body.task.attempt ?? 1;

/** Deliberately wrong variants of decide, each one rule broken, and the invariant that must catch it. */
const PLANTED: { invariant: Invariant; bug: string; decide: DecideFn }[] = [
  {
    invariant: 'one-pod-per-attempt',
    bug: 'a resubmit keeps the attempt number, so the attempt whose pod is gone is created again',
    decide: (o, now, s) => {
      const d = decide(o, now, s);
      return { ...d, actions: d.actions.map((a) => (a.type === 'writeRecord' && a.meaning === 'resubmit' ? { ...a, body: { ...a.body, task: { ...a.body.task, attempt: attemptOf(o) } } } : a)) };
    },
  },
  {
    invariant: 'one-terminal-write',
    bug: 'a cancel is honoured whatever the state, overwriting a stored end',
    decide: (o, now, s) => decide(o.record.cancelRequested !== undefined && o.record.body.state === 'finished' ? { ...o, record: { ...o.record, body: { ...o.record.body, state: 'queued' } } } : o, now, s),
  },
  {
    invariant: 'no-create-after-end',
    bug: 'the cancel request is not read before a create',
    decide: (o, now, s) => decide({ ...o, record: { ...o.record, cancelRequested: undefined } }, now, s),
  },
  {
    invariant: 'no-create-after-end',
    bug: 'an ended task without pods is created again',
    decide: (o, now, s) => {
      const d = decide(o, now, s);
      return o.record.body.state === 'finished' && o.pods.length === 0 && o.admitted ? { ...d, actions: [...d.actions, { type: 'createPod', attempt: attemptOf(o) }] } : d;
    },
  },
  {
    invariant: 'release-after-end',
    bug: 'the pod is released in the same sync as, and before, the write of its end',
    decide: (o, now, s) => {
      const d = decide(o, now, s);
      const current = o.pods.find((p) => podAttempt(p) === attemptOf(o));
      return current && d.actions.some(isEnd) ? { ...d, actions: [{ type: 'releasePod', pod: current }, ...d.actions] } : d;
    },
  },
  {
    invariant: 'quiescent-decided',
    bug: 'no wake-up is returned, so a backoff or a timeout waits for an event that never comes',
    decide: (o, now, s) => ({ ...decide(o, now, s), wakeAt: undefined }),
  },
];

describe('decide over a fake cluster: the invariants hold for every seeded sequence', () => {
  it(`${SEQUENCES} sequences of ${STEPS} events: one pod per attempt, one terminal write per attempt, no create after an end or a cancel, a release only after the end is stored, every task decided once quiet`, () => {
    const failure = explore(decide, SEQUENCES);
    if (failure) expect.fail(describeFailure(failure));
  }, Math.max(30_000, SEQUENCES * 60)); // a longer run by ROLLCALL_MODEL_SEQUENCES gets its time
});

describe('each invariant catches a planted bug (the same model, a wrong decide)', () => {
  for (const planted of PLANTED) {
    it(`${planted.invariant}: ${planted.bug}`, () => {
      const failure = explore(planted.decide, PLANTED_BUDGET, BASE_SEED, planted.invariant);
      expect(failure, `${planted.invariant} missed "${planted.bug}" in ${PLANTED_BUDGET} sequences`).toBeDefined();
      // the violation found is the invariant's own, named with its seed
      expect(failure!.violations[0]!.invariant).toBe(planted.invariant);
      expect(describeFailure(failure!)).toContain(`seed ${failure!.seed}`);
      if (process.env.ROLLCALL_MODEL_VERBOSE) console.log(`${planted.invariant}: found at seed ${failure!.seed}: ${failure!.violations[0]!.detail}`);
    });
  }
});
