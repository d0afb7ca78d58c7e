import { describe, expect, it } from 'vitest';
import type { IncarnationRecord } from '../src/candidate-handle.js';
import type { ChaosEvent } from '../src/failover-protocol.js';
import type { WorkWrite } from '../src/failover-resource.js';
import { judgeFailover, type ChaosFault, type ChaosTimeline } from '../src/failover-verdict.js';

// The failover chaos's verdict on hand-made timelines: each violation is caught, and what the contract allows passes.

type Event = ChaosEvent extends infer E ? (E extends unknown ? Omit<E, 'n'> : never) : never;

function process_(name: string, events: Event[], extra: Partial<IncarnationRecord<ChaosEvent>> = {}): IncarnationRecord<ChaosEvent> {
  return {
    name,
    incarnation: 1,
    pid: 1,
    startedAt: 0,
    events: events.map((e, i) => ({ ...e, n: i + 1 }) as ChaosEvent),
    pauses: [],
    killedAt: undefined,
    shutdownAt: 20_000,
    exitedAt: 20_000,
    exit: { code: 0, signal: null },
    logFile: `${name}.log`,
    ...extra,
  };
}

const work = (incarnation: string, readAt: number, decidedAt: number, accepted = true): WorkWrite => ({ writer: 'w1', incarnation, item: 'w1/item', readAt, decidedAt, accepted });
const started = (incarnation: string, t: number, token = 1, resumed = false): Event => ({ type: 'failoverStarted', id: 'w1', incarnation, token, resumed, attempt: 1, reason: 'expired', t });
const acked = (incarnation: string, t: number, token = 1): Event => ({ type: 'acknowledged', id: 'w1', incarnation, token, t });
const removed = (incarnation: string, t: number): Event => ({ type: 'memberRemoved', id: 'w1', incarnation, reason: 'expired', t });
const cut: ChaosFault = { kind: 'worker-cut', at: 1000, until: 4000, target: 'w1', leader: undefined, incarnation: '10' };

/**
 * A worker w1 cut off at 1000: its member (incarnation 10) alive until its sample
 * at 2480, `lost` at 2500, re-announced as 20; the leader m1 removes 10 at 3000,
 * starts its failover at 3010 and acknowledges it at 3020. `change` edits it.
 */
interface Change {
  worker?: Event[];
  leader?: Event[];
  work?: WorkWrite[];
  faults?: ChaosFault[];
  workerExtra?: Partial<IncarnationRecord<ChaosEvent>>;
}

function cutOff(change: Change = {}): string[] {
  return judgeFailover({ processes: cutOffProcesses(change), work: change.work ?? [work('10', 900, 901)], fences: [], faults: change.faults ?? [cut], startedAt: 0, endedAt: 20_000 });
}

/** The worker and the leader of {@link cutOff}. */
function cutOffProcesses(change: Change = {}): IncarnationRecord<ChaosEvent>[] {
  const worker = process_(
    'w1',
    change.worker ?? [
      { type: 'announced', incarnation: '10', t: 100 },
      { type: 'alive', incarnation: '10', alive: true, t: 120 },
      { type: 'work', incarnation: '10', outcome: 'accepted', t: 900 },
      { type: 'alive', incarnation: '10', alive: false, lastAlive: 2480, t: 2500 },
      { type: 'memberLost', incarnation: '10', reason: 'renew-deadline', t: 2500 },
      { type: 'reannounced', incarnation: '20', previous: '10', t: 4100 },
      { type: 'alive', incarnation: '20', alive: true, t: 4120 },
    ],
    change.workerExtra,
  );
  const leader = process_('m1', change.leader ?? [{ type: 'elected', token: 1, valid: true, t: 50 }, { type: 'memberAdded', id: 'w1', incarnation: '10', t: 110 }, removed('10', 3000), started('10', 3010), acked('10', 3020)]);
  return [worker, leader];
}

/** Judges {@link cutOff}'s worker with `others` beside it (instead of its leader, unless `withLeader`). */
function judgeWith(others: IncarnationRecord<ChaosEvent>[], withLeader = true): string[] {
  const [worker, leader] = cutOffProcesses();
  const timeline: ChaosTimeline = { processes: [worker!, ...(withLeader ? [leader!] : []), ...others], work: [], fences: [], faults: [cut], startedAt: 0, endedAt: 20_000 };
  return judgeFailover(timeline);
}

describe('failover chaos verdict', () => {
  it('passes a cut-off worker that lost before it was removed and was failed over once', () => {
    expect(cutOff()).toEqual([]);
  });

  it('catches a double failover: two acknowledgements of one incarnation', () => {
    const second = process_('m2', [{ type: 'elected', token: 2, valid: true, t: 5000 }, started('10', 5010, 2, true), acked('10', 5020, 2)]);
    expect(judgeWith([second])).toEqual([expect.stringMatching(/^failed over twice: w1 incarnation 10 acknowledged 2 times/), expect.stringMatching(/^failover run after its acknowledgement: m2#1 started w1 incarnation 10/)]);
  });

  it('catches a failover run again after its acknowledgement, even if never acknowledged twice', () => {
    const found = cutOff({ leader: [{ type: 'elected', token: 1, valid: true, t: 50 }, removed('10', 3000), started('10', 3010), acked('10', 3020), started('10', 3500, 1)] });
    expect(found).toEqual([expect.stringMatching(/^failover run after its acknowledgement: m1#1 started w1 incarnation 10 at \+3\.500 s/)]);
  });

  it('passes a successor resuming a claimed, unacknowledged failover', () => {
    const first = process_('m1', [{ type: 'elected', token: 1, valid: true, t: 50 }, removed('10', 3000), started('10', 3010), { type: 'held', incarnation: '10', token: 1, t: 3015 }], { killedAt: 3100, exit: { code: null, signal: 'SIGKILL' }, shutdownAt: undefined });
    const successor = process_('m2', [{ type: 'elected', token: 2, valid: true, t: 5000 }, started('10', 5010, 2, true), acked('10', 5020, 2)]);
    expect(judgeWith([first, successor], false)).toEqual([]);
  });

  it('catches an incarnation never failed over: lost, or SIGKILLed', () => {
    expect(cutOff({ leader: [{ type: 'elected', token: 1, valid: true, t: 50 }, { type: 'memberAdded', id: 'w1', incarnation: '10', t: 110 }, removed('10', 3000)] })).toEqual([expect.stringMatching(/^never failed over: w1 incarnation 10 ended \(lost, renew-deadline/)]);
    const killed = process_('w2', [{ type: 'announced', incarnation: '30', t: 100 }], { killedAt: 1000, shutdownAt: undefined, exit: { code: null, signal: 'SIGKILL' } });
    const observer = process_('m2', [{ type: 'memberAdded', id: 'w2', incarnation: '30', t: 110 }, { type: 'elected', token: 2, valid: true, t: 200 }]);
    expect(judgeWith([killed, observer])).toEqual([expect.stringMatching(/^never failed over: w2 incarnation 30 ended \(SIGKILL at \+1\.000 s\)/)]);
  });

  it('names a lost incarnation a leader skipped as a graceful withdraw', () => {
    const found = cutOff({ leader: [{ type: 'elected', token: 1, valid: true, t: 50 }, { type: 'memberAdded', id: 'w1', incarnation: '10', t: 110 }, { ...removed('10', 3000), reason: 'deleted' } as Event, { type: 'skipped', id: 'w1', incarnation: '10', token: 1, t: 3010 }] });
    expect(found).toEqual([expect.stringMatching(/^never failed over: w1 incarnation 10 ended \(lost, .*; m1#1 recorded it skipped, as a graceful withdraw, at \+3\.010 s$/)]);
  });

  it('does not ask a failover of an incarnation no leader saw alive while leading (the recipe\'s bound)', () => {
    // Lost at 2500; the leader's view held it from 110, but its term began at 2600.
    const late = [{ type: 'memberAdded', id: 'w1', incarnation: '10', t: 110 }, { type: 'elected', token: 1, valid: true, t: 2600 }, removed('10', 3000)] as Event[];
    expect(cutOff({ leader: late })).toEqual([]);
    // Its term had begun at 50, and ended at 100: before the view held it.
    const ended = [{ type: 'elected', token: 1, valid: true, t: 50 }, { type: 'lost', token: 1, reason: 'resigned', t: 100 }, { type: 'memberAdded', id: 'w1', incarnation: '10', t: 110 }, removed('10', 3000)] as Event[];
    expect(cutOff({ leader: ended })).toEqual([]);
    // Held during the term: required.
    expect(cutOff({ leader: [{ type: 'elected', token: 1, valid: true, t: 50 }, { type: 'memberAdded', id: 'w1', incarnation: '10', t: 110 }, removed('10', 3000)] })).toEqual([expect.stringMatching(/^never failed over: w1 incarnation 10/)]);
  });

  it('does not ask a failover of an incarnation withdrawn at shutdown', () => {
    expect(cutOff()).toEqual([]); // incarnation 20, current at shutdown, is not failed over
  });

  it('catches a failover begun before the incarnation ended', () => {
    const found = cutOff({ leader: [{ type: 'elected', token: 1, valid: true, t: 50 }, started('10', 2000), acked('10', 2010), removed('10', 3000)] });
    expect(found).toEqual([expect.stringMatching(/^failed over while it lived: m1#1 started w1 incarnation 10 at \+2\.000 s/)]);
  });

  it('catches a write accepted after the failover began, and passes one refused', () => {
    expect(cutOff({ work: [work('10', 2400, 3015)] })).toEqual([expect.stringMatching(/^write accepted after its failover began: w1 as w1 incarnation 10 read alive at \+2\.400 s, accepted at \+3\.015 s; m1#1 began its failover at \+3\.010 s/)]);
    expect(cutOff({ work: [work('10', 2400, 3015, false)] })).toEqual([]);
  });

  it('catches a peer removing a cut-off member before its lost', () => {
    const leader: Event[] = [{ type: 'elected', token: 1, valid: true, t: 50 }, removed('10', 2400), started('10', 2410), acked('10', 2420)];
    const worker: Event[] = [
      { type: 'announced', incarnation: '10', t: 100 },
      { type: 'alive', incarnation: '10', alive: true, t: 120 },
      { type: 'alive', incarnation: '10', alive: false, lastAlive: 2380, t: 2400 },
      { type: 'memberLost', incarnation: '10', reason: 'renew-deadline', t: 2450 },
      { type: 'reannounced', incarnation: '20', previous: '10', t: 4100 },
    ];
    expect(cutOff({ leader, worker })).toEqual([expect.stringMatching(/^removed before lost: in the worker-cut at \+1\.000 s, m1#1 saw w1 incarnation 10 removed \(expired\) at \+2\.400 s; its lost came at \+2\.450 s/)]);
    // Never lost at all.
    expect(cutOff({ leader, worker: worker.filter((e) => e.type !== 'memberLost') })).toEqual([expect.stringMatching(/^removed before lost: .* it never reported lost/)]);
  });

  it('excuses a removal while the member was stopped, until its first event after SIGCONT', () => {
    const pause: ChaosFault = { ...cut, kind: 'worker-pause' };
    const leader: Event[] = [{ type: 'elected', token: 1, valid: true, t: 50 }, removed('10', 3000), started('10', 3010), acked('10', 3020)];
    const worker = (firstAfter: number): Event[] => [
      { type: 'announced', incarnation: '10', t: 100 },
      { type: 'alive', incarnation: '10', alive: true, t: 120 },
      { type: 'stall', from: 990, t: firstAfter },
      { type: 'alive', incarnation: '10', alive: false, lastAlive: 990, t: firstAfter },
      { type: 'memberLost', incarnation: '10', reason: 'renew-deadline', t: firstAfter + 1 },
      { type: 'reannounced', incarnation: '20', previous: '10', t: 4100 },
    ];
    expect(cutOff({ leader, worker: worker(3600), faults: [pause], workerExtra: { pauses: [{ from: 1000, to: 3500 }] } })).toEqual([]);
    // Resumed before the removal, and its lost came after it: not excused.
    expect(cutOff({ leader, worker: worker(2900).map((e) => (e.type === 'stall' ? { ...e, t: 2900 } : e.type === 'memberLost' ? { ...e, t: 3100 } : e)), faults: [pause], workerExtra: { pauses: [{ from: 1000, to: 2800 }] } })).toEqual([
      expect.stringMatching(/^removed before lost: in the worker-pause at \+1\.000 s, m1#1 saw w1 incarnation 10 removed \(expired\) at \+3\.000 s; its lost came at \+3\.100 s/),
    ]);
  });

  it('catches a member that read itself alive after a peer removed it: a sample, the last true sample before a change, a write', () => {
    const base: Event[] = [{ type: 'announced', incarnation: '10', t: 100 }, { type: 'alive', incarnation: '10', alive: true, t: 120 }];
    const lost: Event = { type: 'memberLost', incarnation: '10', reason: 'renew-deadline', t: 2500 };
    const lastTrue = cutOff({ worker: [...base, lost, { type: 'alive', incarnation: '10', alive: false, lastAlive: 3005, t: 3025 }], work: [] });
    expect(lastTrue).toEqual([expect.stringMatching(/^alive after removed: w1#1 read itself alive as w1 incarnation 10 at \+3\.005 s; m1#1 saw it removed \(expired\) at \+3\.000 s/)]);
    const written = cutOff({ worker: [...base, { type: 'work', incarnation: '10', outcome: 'rejected', t: 3001 }, lost, { type: 'alive', incarnation: '10', alive: false, lastAlive: 2480, t: 2500 }], work: [] });
    expect(written).toEqual([expect.stringMatching(/^alive after removed: w1#1 read itself alive as w1 incarnation 10 at \+3\.001 s/)]);
    const sampled = cutOff({ worker: [{ type: 'announced', incarnation: '10', t: 100 }, lost, { type: 'alive', incarnation: '10', alive: true, t: 3002 }], work: [] });
    expect(sampled).toEqual([expect.stringMatching(/^alive after removed: w1#1 read itself alive as w1 incarnation 10 at \+3\.002 s/)]);
  });

  it('catches a crash: a fatal error, or an exit nobody asked for', () => {
    const found = cutOff({ workerExtra: { shutdownAt: undefined, exitedAt: 6000, exit: { code: 1, signal: null } } });
    expect(found).toEqual([expect.stringMatching(/^candidate crash: w1#1 exited at \+6\.000 s/)]);
  });
});
