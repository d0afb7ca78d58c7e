import { describe, expect, it } from 'vitest';
import type { IncarnationRecord } from '../src/candidate-handle.js';
import type { ResourceWrite } from '../src/fenced-resource.js';
import type { CandidateEvent } from '../src/protocol.js';
import type { Timeline } from '../src/timeline.js';
import { figures } from '../src/figures.js';
import { judge } from '../src/verdict.js';

// The verdict on hand-made timelines: each check fails when it must, and what the contract allows passes.

// `valid` (of an announcement) defaults to true here: the hand-made timelines are about other things.
type Event = CandidateEvent extends infer E ? (E extends unknown ? Omit<E, 'n' | 'valid'> & ('valid' extends keyof E ? { valid?: boolean } : unknown) : never) : never;

function candidate(name: string, events: Event[], extra: Partial<IncarnationRecord> = {}): IncarnationRecord {
  return {
    name,
    incarnation: 1,
    pid: 1,
    startedAt: 0,
    events: events.map((e, i) => ({ ...(e.type === 'elected' || e.type === 'lockAcquired' ? { valid: true } : {}), ...e, n: i + 1 }) as CandidateEvent),
    pauses: [],
    killedAt: undefined,
    shutdownAt: 10_000,
    exitedAt: 10_000,
    exit: { code: 0, signal: null },
    logFile: `${name}.log`,
    ...extra,
  };
}

function write(writer: string, token: number, readAt: number, accepted = true, of: 'election' | 'lock' = 'election'): ResourceWrite {
  return { of, token, writer, incarnation: 1, readAt, decidedAt: readAt + 1, accepted };
}

function verdict(incarnations: IncarnationRecord[], writes: ResourceWrite[] = []): string[] {
  const timeline: Timeline = { names: ['a', 'b'], incarnations, writes, faults: [], watchSeesEveryChange: true, renewDeadlineMs: { election: 1500, lock: 1500 }, startedAt: 0, endedAt: 10_000 };
  return judge(timeline);
}

describe('two leaders at one instant', () => {
  it('passes a handover: one term ends before the next begins', () => {
    expect(verdict([candidate('a', [{ type: 'elected', token: 1, t: 0 }, { type: 'lost', token: 1, reason: 'released', t: 100 }]), candidate('b', [{ type: 'elected', token: 2, t: 150 }])])).toEqual([]);
  });

  it('fails on overlapping terms of two running processes', () => {
    const found = verdict([candidate('a', [{ type: 'elected', token: 1, t: 0 }, { type: 'lost', token: 1, reason: 'renew-deadline', t: 300 }]), candidate('b', [{ type: 'elected', token: 2, t: 200 }])]);
    expect(found).toEqual([expect.stringMatching(/^two leaders at once: a#1 .* and b#1 .* overlap 100\.0 ms/)]);
  });

  it('ends a term at the first sample that read the token as gone, before the lost event', () => {
    const a = candidate('a', [{ type: 'elected', token: 1, t: 0 }, { type: 'belief', of: 'election', token: undefined, t: 100 }, { type: 'lost', token: 1, reason: 'renew-deadline', t: 400 }]);
    expect(verdict([a, candidate('b', [{ type: 'elected', token: 2, t: 200 }])])).toEqual([]);
  });

  it('excuses a paused process from SIGSTOP until its first event after SIGCONT, and no longer', () => {
    const paused = (firstAfter: number) => candidate('a', [{ type: 'elected', token: 1, t: 0 }, { type: 'lost', token: 1, reason: 'renew-deadline', t: firstAfter }], { pauses: [{ from: 50, to: 400 }] });
    expect(verdict([paused(410), candidate('b', [{ type: 'elected', token: 2, t: 200 }])])).toEqual([]);
    // b's term began before the SIGSTOP: no allowance covers 20..50.
    expect(verdict([paused(410), candidate('b', [{ type: 'elected', token: 2, t: 20 }])])).toEqual([expect.stringMatching(/overlap 30\.0 ms/)]);
  });

  it('ends a term at the SIGCONT of a pause longer than the renew deadline, whichever loss the process reports first', () => {
    // Resumed at 2000, a reports its election's loss at 2001 and its lock's at 2003: both terms ended at 2000.
    const a = candidate('a', [{ type: 'elected', token: 1, t: 0 }, { type: 'lockAcquired', token: 1, t: 0 }, { type: 'lost', token: 1, reason: 'renew-deadline', t: 2001 }, { type: 'lockLost', token: 1, reason: 'renew-deadline', t: 2003 }], { pauses: [{ from: 100, to: 2000 }] });
    const b = candidate('b', [{ type: 'lockAcquired', token: 2, t: 1900 }]);
    expect(verdict([a, b])).toEqual([]);
    // A pause shorter than the deadline ends nothing: the lock's overlap after the first event counts.
    const short = candidate('a', [{ type: 'lockAcquired', token: 1, t: 0 }, { type: 'elected', token: 1, t: 0 }, { type: 'lost', token: 1, reason: 'released', t: 1201 }, { type: 'lockLost', token: 1, reason: 'released', t: 1204 }], { pauses: [{ from: 100, to: 1200 }] });
    expect(verdict([short, candidate('b', [{ type: 'lockAcquired', token: 2, t: 1150 }])])).toEqual([expect.stringMatching(/^two lock holders at once: .* overlap 3\.0 ms/)]);
  });

  it('excuses a stall the process reported, and only its span', () => {
    const stalled = (stallEnd: number) =>
      candidate('a', [
        { type: 'elected', token: 1, t: 0 },
        { type: 'stall', from: 100, t: stallEnd },
        { type: 'belief', of: 'election', token: undefined, t: 500 },
      ]);
    expect(verdict([stalled(500), candidate('b', [{ type: 'elected', token: 2, t: 300 }])])).toEqual([]);
    expect(verdict([stalled(350), candidate('b', [{ type: 'elected', token: 2, t: 300 }])])).toEqual([expect.stringMatching(/overlap 150\.0 ms/)]);
  });

  it('ends a SIGKILLed holder at the kill', () => {
    const killed = candidate('a', [{ type: 'elected', token: 1, t: 0 }], { killedAt: 100, exitedAt: 101, exit: { code: null, signal: 'SIGKILL' }, shutdownAt: undefined });
    expect(verdict([killed, candidate('b', [{ type: 'elected', token: 2, t: 150 }])])).toEqual([]);
  });

  it('checks lock holds the same way', () => {
    const found = verdict([candidate('a', [{ type: 'lockAcquired', token: 1, t: 0 }, { type: 'lockLost', token: 1, reason: 'released', t: 300 }]), candidate('b', [{ type: 'lockAcquired', token: 2, t: 200 }])]);
    expect(found).toEqual([expect.stringMatching(/^two lock holders at once/)]);
  });
});

describe('fencing', () => {
  it('fails on a token not above the last', () => {
    const found = verdict([candidate('a', [{ type: 'elected', token: 5, t: 0 }, { type: 'lost', token: 5, reason: 'released', t: 10 }]), candidate('b', [{ type: 'elected', token: 5, t: 20 }])]);
    expect(found).toEqual([expect.stringMatching(/^fencing token not above the last: election token 5 of b#1/)]);
  });

  it('fails on a stale write the resource accepted, not on one it rejected', () => {
    const a = candidate('a', [{ type: 'elected', token: 1, t: 0 }, { type: 'lost', token: 1, reason: 'renew-deadline', t: 100 }]);
    const b = candidate('b', [{ type: 'elected', token: 2, t: 200 }]);
    expect(verdict([a, b], [write('a', 1, 50), write('a', 1, 300, false)])).toEqual([]);
    expect(verdict([a, b], [write('a', 1, 300)])).toEqual([expect.stringMatching(/^stale write accepted: a#1 wrote election token 1/)]);
  });

  it('fails on a write with a token read after a SIGSTOP past the renew deadline, accepted or not', () => {
    const a = candidate('a', [{ type: 'elected', token: 1, t: 0 }, { type: 'lost', token: 1, reason: 'renew-deadline', t: 2100 }], { pauses: [{ from: 100, to: 2000 }] });
    expect(verdict([a], [write('a', 1, 50), write('a', 1, 2010, false)])).toEqual([expect.stringMatching(/^a write past the renew deadline: a#1 .* after a SIGSTOP of 1900 ms .*\(rejected\)/)]);
    // A pause shorter than the deadline leaves the term valid.
    const short = candidate('a', [{ type: 'elected', token: 1, t: 0 }], { pauses: [{ from: 100, to: 1200 }] });
    expect(verdict([short], [write('a', 1, 1210)])).toEqual([]);
  });

  it('fails on a write with a token its writer was never announced', () => {
    expect(verdict([candidate('a', [{ type: 'elected', token: 1, t: 0 }])], [write('a', 2, 10)])).toEqual([expect.stringMatching(/^a write with a token never announced: a#1 wrote election token 2/)]);
  });
});

describe('candidate crash', () => {
  it('fails on an exit nobody asked for, not on a SIGKILL or a shutdown', () => {
    expect(verdict([candidate('a', [], { shutdownAt: undefined, exit: { code: 1, signal: null } })])).toEqual([expect.stringMatching(/^candidate crash: a#1 exited/)]);
    expect(verdict([candidate('a', [], { shutdownAt: undefined, killedAt: 5, exit: { code: null, signal: 'SIGKILL' } })])).toEqual([]);
    expect(verdict([candidate('a', [{ type: 'fatal', message: 'boom', t: 5 }], { exit: { code: 1, signal: null } })])).toEqual([expect.stringMatching(/^candidate crash: a#1 reported a fatal error .*boom/)]);
  });
});

describe('member events', () => {
  const added = (id: string, seq: number, t: number): Event => ({ type: 'memberAdded', id, payload: { seq }, t });

  it('passes a replay that matches the checkpoints, also when events came between the view and its report', () => {
    const events: Event[] = [
      added('a', 0, 1),
      added('b', 0, 2),
      { type: 'memberUpdated', id: 'b', payload: { seq: 1 }, t: 3 },
      // members() was called right after event 3; event 5 was reported before its answer.
      { type: 'memberRemoved', id: 'a', payload: { seq: 0 }, reason: 'expired', t: 4 },
      { type: 'members', checkpoint: 1, after: 4, members: [{ id: 'b', payload: { seq: 1 } }], t: 5 },
    ];
    expect(verdict([candidate('a', events)])).toEqual([]);
  });

  it('fails on a view that differs from members() at a checkpoint', () => {
    const events: Event[] = [added('a', 0, 1), { type: 'members', checkpoint: 1, after: 1, members: [{ id: 'a', payload: { seq: 0 } }, { id: 'b', payload: { seq: 0 } }], t: 2 }];
    expect(verdict([candidate('a', events)])).toEqual([expect.stringMatching(/^lost or phantom member event: a#1 at checkpoint 1: its events say b=absent, members\(\) says b=\{"seq":0\}/)]);
  });

  it('fails on added twice, removed or updated without added, and an unknown member', () => {
    const events: Event[] = [added('a', 0, 1), added('a', 0, 2), { type: 'memberRemoved', id: 'b', payload: null, reason: 'deleted', t: 3 }, { type: 'memberUpdated', id: 'b', payload: null, t: 4 }, added('z', 0, 5)];
    expect(verdict([candidate('a', events)])).toEqual([
      expect.stringMatching(/a#1 saw a added twice/),
      expect.stringMatching(/a#1 saw b removed without having seen it added/),
      expect.stringMatching(/a#1 saw b updated without having seen it added/),
      expect.stringMatching(/^phantom member: a#1 saw z added/),
    ]);
  });
});

describe('an update raced by a withdraw', () => {
  const raced = (outcome: string, seenPayload: number | undefined) =>
    candidate('a', [
      { type: 'memberAdded', id: 'a', payload: { seq: 0 }, t: 1 },
      ...(seenPayload === undefined ? [] : [{ type: 'memberUpdated', id: 'a', payload: { seq: seenPayload }, t: 2 } as Event]),
      { type: 'memberRemoved', id: 'a', payload: { seq: seenPayload ?? 0 }, reason: 'deleted', t: 3 },
      { type: 'raced', payload: { seq: 1 }, outcome, t: 4 },
    ]);

  it('passes CLOSED for a payload never seen, and a resolved update that was seen', () => {
    expect(verdict([raced('CLOSED', undefined)])).toEqual([]);
    expect(verdict([raced('written', 1)])).toEqual([]);
  });

  it('fails on CLOSED for a payload that was written, and on a resolved update never seen', () => {
    expect(verdict([raced('CLOSED', 1)])).toEqual([expect.stringMatching(/^an update rejected with CLOSED was written: a#1's payload \{"seq":1\}/)]);
    expect(verdict([raced('written', undefined)])).toEqual([expect.stringMatching(/^an update that resolved was never written/)]);
  });
});

describe('an update raced by a withdraw, in pod liveness', () => {
  // a raced its update from t=10 to t=40. In pod liveness a member is alive while its pod is Ready: one no observer
  // held when the race began is in no view, so its update is in none either (CI: c2#1 raced before any pod was Ready).
  const target = (outcome: string, from: number | null = 10) => candidate('a', [{ type: 'raced', payload: { seq: 1 }, outcome, t: 40, ...(from === null ? {} : { from }) }]);
  const observer = (events: Event[]) => candidate('b', events);
  const judgePods = (incarnations: IncarnationRecord[], faults: Timeline['faults'] = []) =>
    judge({ names: ['a', 'b'], incarnations, writes: [], faults, watchSeesEveryChange: true, renewDeadlineMs: { election: 1500, lock: 1500 }, startedAt: 0, endedAt: 10_000, podReadiness: { a: [{ ready: false, at: 0 }, { ready: true, at: 5 }, { ready: false, at: 30 }, { ready: true, at: 70 }], b: [{ ready: true, at: 0 }] } });
  // b held a when the race began and saw the withdraw end it: b saw every state of a's record up to that mark.
  const witnessed = (update: Event[]) =>
    observer([{ type: 'memberAdded', id: 'a', payload: { seq: 0 }, t: 1 }, ...update, { type: 'memberRemoved', id: 'a', payload: { seq: 0 }, reason: 'deleted', t: 45 }, { type: 'memberAdded', id: 'a', payload: { seq: 2 }, t: 60 }]);
  const unseenWitnessed = /^an update that resolved was never written: no watcher saw a#1's payload \{"seq":1\} before its withdraw, which b#1 saw end a while it held it$/;

  it('passes a resolved update of a member no observer held when the race began (its pod not Ready yet)', () => {
    expect(judgePods([target('written'), observer([{ type: 'memberAdded', id: 'a', payload: { seq: 2 }, t: 100 }])])).toEqual([]);
  });

  it('passes a resolved update that an observer holding the member saw, and one whose member expired in that observer\'s view first', () => {
    expect(judgePods([target('written'), witnessed([{ type: 'memberUpdated', id: 'a', payload: { seq: 1 }, t: 20 }])])).toEqual([]);
    const expiredFirst = observer([{ type: 'memberAdded', id: 'a', payload: { seq: 0 }, t: 1 }, { type: 'memberRemoved', id: 'a', payload: { seq: 0 }, reason: 'expired', t: 35 }, { type: 'memberAdded', id: 'a', payload: { seq: 2 }, t: 80 }]);
    expect(judgePods([target('written'), expiredFirst])).toEqual([]);
  });

  it('fails on a resolved update never seen though an observer held the member when the race began and saw the withdraw end it', () => {
    expect(judgePods([target('written'), witnessed([])])).toEqual([expect.stringMatching(unseenWitnessed)]);
  });

  it('takes the race start from the withdraw fault when the candidate did not report it, and is strict when neither says', () => {
    const fault = { kind: 'withdraw' as const, at: 8, until: 41, target: 'a', leader: undefined };
    const unheld = observer([{ type: 'memberAdded', id: 'a', payload: { seq: 2 }, t: 100 }]);
    expect(judgePods([target('written', null), unheld], [fault])).toEqual([]);
    expect(judgePods([target('written', null), witnessed([])], [fault])).toEqual([expect.stringMatching(unseenWitnessed)]);
    expect(judgePods([target('written', null), unheld])).toEqual([expect.stringMatching(/^an update that resolved was never written: no watcher saw a#1's payload \{"seq":1\} before its withdraw$/)]);
  });

  it('still fails on CLOSED for a payload that was written', () => {
    expect(judgePods([target('CLOSED'), witnessed([{ type: 'memberUpdated', id: 'a', payload: { seq: 1 }, t: 20 }])])).toEqual([expect.stringMatching(/^an update rejected with CLOSED was written/)]);
  });
});

describe('pod liveness: a member whose pod stays Ready is never removed', () => {
  const removals = (times: number): Event[] => [
    { type: 'memberAdded', id: 'b', payload: 1, t: 0 },
    ...Array.from({ length: times }, (_, i): Event[] => [
      { type: 'memberRemoved', id: 'b', payload: 1, reason: 'expired', t: 100 + i * 100 },
      { type: 'memberAdded', id: 'b', payload: 1, t: 150 + i * 100 },
    ]).flat(),
    // A withdraw is no expiry.
    { type: 'memberRemoved', id: 'b', payload: 1, reason: 'deleted', t: 900 },
  ];
  const judgeWith = (events: Event[], podReadiness: Timeline['podReadiness']) =>
    judge({ names: ['a', 'b'], incarnations: [candidate('a', events)], writes: [], faults: [], watchSeesEveryChange: true, renewDeadlineMs: { election: 1500, lock: 1500 }, startedAt: 0, endedAt: 10_000, podReadiness });

  it('passes a member that expired each time its pod went from Ready to not Ready, and come back', () => {
    const flaps = { b: [{ ready: false, at: 0 }, { ready: true, at: 10 }, { ready: false, at: 90 }, { ready: true, at: 140 }, { ready: false, at: 190 }, { ready: true, at: 240 }], a: [{ ready: true, at: 0 }] };
    expect(judgeWith(removals(2), flaps)).toEqual([]);
  });

  it('fails on an expiry its pod\'s readiness does not account for; a pod starting not Ready is no going not Ready', () => {
    const once = { b: [{ ready: false, at: 0 }, { ready: true, at: 10 }, { ready: false, at: 90 }, { ready: true, at: 140 }] };
    expect(judgeWith(removals(2), once)).toEqual([expect.stringMatching(/^a member removed while its pod stayed Ready: a#1 saw b expire 2 times, its pod went not Ready 1 times/)]);
    expect(judgeWith(removals(1), { b: [{ ready: false, at: 0 }, { ready: true, at: 10 }] })).toEqual([expect.stringMatching(/expire 1 times, its pod went not Ready 0 times/)]);
  });

  it('is not judged when the candidates heartbeat', () => {
    expect(judgeWith(removals(2), undefined)).toEqual([]);
  });
});

describe('invalid announcements', () => {
  // Stale when the listener ran (a pause between the core's last validity read and it): no term, counted on their own.
  const stale = candidate('a', [
    { type: 'elected', token: 1, t: 0, valid: false },
    { type: 'lockAcquired', token: 1, t: 0, valid: false },
  ]);
  const b = candidate('b', [{ type: 'elected', token: 2, t: 50 }, { type: 'lockAcquired', token: 2, t: 50 }]);

  it('open no term: a later holder overlaps nobody', () => {
    expect(verdict([stale, b])).toEqual([]);
  });

  it('the same announcements, valid, overlap the later holder (the check above can fail)', () => {
    const valid = candidate('a', [{ type: 'elected', token: 1, t: 0 }, { type: 'lockAcquired', token: 1, t: 0 }]);
    expect(verdict([valid, b])).toEqual([expect.stringMatching(/^two leaders at once/), expect.stringMatching(/^two lock holders at once/)]);
  });

  it('a write under an invalid announcement is one never announced', () => {
    expect(verdict([stale, b], [write('a', 1, 10)])).toEqual([expect.stringMatching(/^a write with a token never announced: a#1 wrote election token 1/)]);
  });

  it('are counted apart from terms and lock holds', () => {
    const timeline: Timeline = { names: ['a', 'b'], incarnations: [stale, b], writes: [], faults: [], watchSeesEveryChange: true, renewDeadlineMs: { election: 1500, lock: 1500 }, startedAt: 0, endedAt: 10_000 };
    expect(figures('memory', 2, timeline, 0)).toMatchObject({ terms: 1, lockHolds: 1, invalidAnnouncements: 2 });
  });
});
