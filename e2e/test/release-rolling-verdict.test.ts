import { describe, expect, it } from 'vitest';
import type { IncarnationRecord } from '../src/candidate-handle.js';
import type { CandidateEvent } from '../src/protocol.js';
import { failoverOnce, liveMembersStay, updatesAcrossWriters, updatesWithinIncarnation, type ExpectedFailover } from '../src/release-rolling-verdict.js';
import type { Timeline } from '../src/timeline.js';

// The rolling update's own verdicts on hand-made timelines: each violation caught, what the update does allowed.

type Event = CandidateEvent extends infer E ? (E extends unknown ? Omit<E, 'n'> : never) : never;

/** Process `name#incarnation`, started at `startedAt`, killed at `killedAt` (or running to the end). */
function process(name: string, incarnation: number, startedAt: number, killedAt: number | undefined, events: Event[] = []): IncarnationRecord {
  return {
    name,
    incarnation,
    pid: 1,
    startedAt,
    events: events.map((e, i) => ({ ...e, n: i + 1 }) as CandidateEvent),
    pauses: [],
    killedAt,
    shutdownAt: undefined,
    exitedAt: killedAt,
    exit: killedAt === undefined ? undefined : { code: null, signal: 'SIGKILL' },
    logFile: `${name}-${incarnation}.log`,
  };
}

function timeline(incarnations: IncarnationRecord[]): Timeline {
  return { names: ['c1', 'c2'], incarnations, writes: [], faults: [], watchSeesEveryChange: true, renewDeadlineMs: { election: 1500, lock: 1500 }, startedAt: 0, endedAt: 10_000 };
}

const removed = (id: string, writer: number, t: number): Event => ({ type: 'memberRemoved', id, payload: { incarnation: writer, seq: 3 }, reason: 'replaced', incarnation: '17', t });
const started = (id: string, incarnation: string, writer: number, t: number, resumed = false): Event => ({ type: 'failoverStarted', id, incarnation, reason: 'replaced', lastPayload: { incarnation: writer }, resumed, token: 4, t });
const acked = (id: string, incarnation: string, t: number): Event => ({ type: 'failoverAcknowledged', id, incarnation, token: 4, t });

describe('liveMembersStay: a member that did not restart is never removed', () => {
  // c2#1 runs from 0; its successor c2#2 starts at 5000 (taking c2 and c2-m1 over) and c2#1 is killed at 5200.
  const c2 = [process('c2', 1, 0, 5200), process('c2', 2, 5000, undefined)];

  it('catches a removal while its writer runs on unreplaced (an old member read as a new incarnation at a heartbeat)', () => {
    const observer = process('c1', 2, 1000, undefined, [removed('c2', 1, 3000), removed('c2-m1', 1, 3001)]);
    const found = liveMembersStay(timeline([observer, ...c2]), 0, 10_000);
    expect(found).toEqual([
      expect.stringMatching(/^a live member was removed: c1#2 saw c2 \(incarnation 17\) removed \(replaced\) at \+3\.000 s while c2#1, which wrote it, ran on unreplaced$/),
      expect.stringMatching(/^a live member was removed: c1#2 saw c2-m1 .* while c2#1/),
    ]);
  });

  it('allows the removal once the successor started, or once the writer was killed', () => {
    expect(liveMembersStay(timeline([process('c1', 2, 1000, undefined, [removed('c2', 1, 5010)]), ...c2]), 0, 10_000)).toEqual([]);
    expect(liveMembersStay(timeline([process('c1', 2, 1000, undefined, [removed('c2', 1, 5300)]), process('c2', 1, 0, 5200)]), 0, 10_000)).toEqual([]);
  });

  it('judges only between from and until', () => {
    expect(liveMembersStay(timeline([process('c1', 2, 1000, undefined, [removed('c2', 1, 3000)]), ...c2]), 3500, 10_000)).toEqual([]);
  });
});

describe('failoverOnce: each replaced incarnation once, never a live one', () => {
  const c2 = [process('c2', 1, 0, 5200), process('c2', 2, 5000, undefined)];
  const expected: ExpectedFailover[] = [{ id: 'c2', writer: 1 }];

  it('passes one start and one acknowledgement after the writer was replaced', () => {
    const leader = process('c1', 2, 1000, undefined, [started('c2', '9', 1, 5100), acked('c2', '9', 5110)]);
    expect(failoverOnce(timeline([leader, ...c2]), expected)).toEqual([]);
  });

  it('catches a second start that is not resumed, and allows a resumed one', () => {
    const twice = [process('c1', 2, 1000, undefined, [started('c2', '9', 1, 5100)]), process('c3', 2, 1000, undefined, [started('c2', '9', 1, 5400), acked('c2', '9', 5410)])];
    expect(failoverOnce(timeline([...twice, ...c2]), expected)).toEqual([expect.stringMatching(/^failed over twice: c2@9 started again by c3#2 at \+5\.400 s \(token 4\), not as resumed$/)]);
    const resumed = [process('c1', 2, 1000, undefined, [started('c2', '9', 1, 5100)]), process('c3', 2, 1000, undefined, [started('c2', '9', 1, 5400, true), acked('c2', '9', 5410)])];
    expect(failoverOnce(timeline([...resumed, ...c2]), expected)).toEqual([]);
  });

  it('catches a second acknowledgement', () => {
    const leader = process('c1', 2, 1000, undefined, [started('c2', '9', 1, 5100), acked('c2', '9', 5110), acked('c2', '9', 5120)]);
    expect(failoverOnce(timeline([leader, ...c2]), expected)).toEqual([expect.stringMatching(/^acknowledged twice: c2@9, the second by c1#2 at \+5\.120 s$/)]);
  });

  it('catches a failover of a member whose writer runs on unreplaced', () => {
    const leader = process('c1', 2, 1000, undefined, [started('c2', '9', 1, 3000), acked('c2', '9', 3010)]);
    expect(failoverOnce(timeline([leader, ...c2]), expected)).toEqual([expect.stringMatching(/^a live member was failed over: c1#2 started c2@9 \(replaced\) at \+3\.000 s while c2#1, which wrote it, ran on unreplaced$/)]);
  });

  it('catches an expected failover never started, and one started and never acknowledged', () => {
    expect(failoverOnce(timeline([process('c1', 2, 1000, undefined), ...c2]), expected)).toEqual(['never failed over: c2 as c2#1 wrote it, replaced while every process ran this release']);
    expect(failoverOnce(timeline([process('c1', 2, 1000, undefined, [started('c2', '9', 1, 5100)]), ...c2]), expected)).toEqual(['never acknowledged: c2@9']);
  });
});

describe('updatesWithinIncarnation: an updated never spans two incarnations', () => {
  const added = (id: string, incarnation: string | undefined, writer: number, t: number): Event => ({ type: 'memberAdded', id, payload: { incarnation: writer }, incarnation, t });
  const updated = (id: string, incarnation: string | undefined, writer: number, t: number): Event => ({ type: 'memberUpdated', id, payload: { incarnation: writer }, incarnation, t });

  it('catches an updated whose incarnation differs from the one the view had', () => {
    const observer = process('c1', 2, 0, undefined, [added('c2', '5', 1, 100), updated('c2', '5', 1, 200), updated('c2', '9', 2, 300)]);
    expect(updatesWithinIncarnation(timeline([observer]))).toEqual([expect.stringMatching(/^an updated spans two incarnations: c1#2 saw c2 updated from incarnation 5 to 9 at \+0\.300 s$/)]);
  });

  it('allows removed then added with a new incarnation, and views of the old release (no incarnation)', () => {
    const observer = process('c1', 2, 0, undefined, [added('c2', '5', 1, 100), removed('c2', 1, 200), added('c2', '9', 2, 210), updated('c2', '9', 2, 300)]);
    const old = process('c3', 1, 0, undefined, [added('c2', undefined, 1, 100), updated('c2', undefined, 2, 300)]);
    expect(updatesWithinIncarnation(timeline([observer, old]))).toEqual([]);
  });

  it('counts updates by an earlier writer than the last (a predecessor taking the record back) as a figure', () => {
    const observer = process('c1', 2, 0, undefined, [added('c2', '9', 2, 100), updated('c2', '9', 1, 200), updated('c2', '9', 2, 300)]);
    expect(updatesAcrossWriters(timeline([observer]))).toBe(1);
    expect(updatesAcrossWriters(timeline([process('c1', 2, 0, undefined, [added('c2', '5', 1, 100), updated('c2', '5', 2, 200)])]))).toBe(0);
  });
});
