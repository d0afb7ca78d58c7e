import type { IncarnationRecord } from './candidate-handle.js';
import type { FaultRecord } from './faults.js';
import type { ChaosEvent } from './failover-protocol.js';
import type { FenceWrite, WorkWrite } from './failover-resource.js';
import { blindWindows, describeHolder, type Window } from './timeline.js';
import { crashes } from './verdict.js';

/**
 * The faults of the failover chaos:
 * - `worker-cut`: a worker's connections cut at its proxy past its member lease, then healed;
 * - `worker-kill`: a worker SIGKILLed, restarted under the same name;
 * - `worker-pause`: a worker SIGSTOPped past its member lease, then SIGCONT;
 * - `leader-kill-in-handler`: the leader SIGKILLed while its failover handler runs (after its fence), restarted;
 * - `leader-pause-in-handler`: the leader SIGSTOPped there past its election lease, then SIGCONT;
 * - `server-restart`: the backend's server restarted.
 */
export type ChaosFaultKind = 'worker-cut' | 'worker-kill' | 'worker-pause' | 'leader-kill-in-handler' | 'leader-pause-in-handler' | 'server-restart';
export const CHAOS_FAULT_KINDS: readonly ChaosFaultKind[] = ['worker-cut', 'worker-kill', 'worker-pause', 'leader-kill-in-handler', 'leader-pause-in-handler', 'server-restart'];

/** One fault as the chaos applied it; `incarnation`: the worker's member incarnation it aimed at (the one the leader's handler held, for the leader faults). */
export type ChaosFault = FaultRecord<ChaosFaultKind> & { incarnation?: string };

/** Everything one failover chaos run recorded, on one CLOCK_MONOTONIC timeline (the soak's). */
export interface ChaosTimeline {
  /** Every process ever started, workers and leaders. */
  processes: readonly IncarnationRecord<ChaosEvent>[];
  /** Every worker write the resource decided. */
  work: readonly WorkWrite[];
  /** Every leader fence the resource decided. */
  fences: readonly FenceWrite[];
  faults: readonly ChaosFault[];
  startedAt: number;
  endedAt: number;
}

type Record_ = IncarnationRecord<ChaosEvent>;
type Of<T extends ChaosEvent['type']> = Extract<ChaosEvent, { type: T }>;
const eventsOf = <T extends ChaosEvent['type']>(record: Record_, type: T): Of<T>[] => record.events.filter((e): e is Of<T> => e.type === type);

/** One member incarnation's life as the timeline shows it. */
interface Life {
  id: string;
  incarnation: string;
  /** The worker process that created it, when it reported the create. */
  owner: Record_ | undefined;
  lost: Of<'memberLost'> | undefined;
  /** Its owner was SIGKILLed while it was the owner's incarnation. */
  killedAt: number | undefined;
  /** Its owner withdrew it (asked to shut down while it was current and not lost). */
  withdrawn: boolean;
  /** Every other process's `removed` of it. */
  removals: { by: Record_; event: Of<'memberRemoved'> }[];
  started: { by: Record_; event: Of<'failoverStarted'> }[];
  acks: { by: Record_; event: Of<'acknowledged'> }[];
  skips: { by: Record_; event: Of<'skipped'> }[];
  /** Each process's `memberAdded` of it: when that process's view first held it. */
  sightings: { by: Record_; t: number }[];
}

/**
 * Everything the failover chaos must never see, as one message each (empty:
 * the run passed). On the merged CLOCK_MONOTONIC timeline, per member incarnation:
 * - **failed over exactly once**: every incarnation that ended without a withdraw
 *   (its `lost`, or its process SIGKILLed) and that a leader's view held during
 *   its term before it ended (the recipe's bound) is acknowledged by exactly one
 *   leader, never run again after its acknowledgement, and never run before
 *   it ended (lost, killed, or removed in some view);
 * - **no write after its failover began**: the resource accepted no write of an
 *   incarnation after the first `failoverStarted` of it (any leader's);
 * - **`lost` before `removed`**: in every cut-off and pause of a worker, each
 *   other process's `removed` of the aimed-at incarnation comes after the
 *   worker's `lost` of it, unless it fell in the worker's blind window (stopped
 *   until its first event after SIGCONT, or a stall it reported), where it
 *   could report nothing; and no worker read itself `alive` (a sample, a work
 *   write) as an incarnation at or after any other process's `removed` of it;
 * - a process crash (the soak's rule).
 */
export function judgeFailover(timeline: ChaosTimeline): string[] {
  const at = (t: number) => `+${((t - timeline.startedAt) / 1000).toFixed(3)} s`;
  const lives = livesOf(timeline);
  const violations = timeline.processes.flatMap((p) => crashes(p, at));
  for (const life of lives.values()) violations.push(...exactlyOnce(life, at), ...lateWrites(life, timeline.work, at), ...aliveAfterRemoved(life, at));
  for (const fault of timeline.faults) violations.push(...lostBeforeRemoved(fault, lives, timeline, at));
  return violations;
}

/**
 * The member incarnations of `processes` that must be failed over by now: ended
 * without a withdraw, and held in a leader's view during its term before they
 * ended (what {@link judgeFailover} requires an acknowledgement of).
 */
export function requiredFailovers(processes: readonly IncarnationRecord<ChaosEvent>[]): string[] {
  const lives = livesOf({ processes, work: [], fences: [], faults: [], startedAt: 0, endedAt: Infinity });
  return [...lives.values()].filter((life) => mustFailOver(life, endOf(life))).map((life) => life.incarnation);
}

const endOf = (life: Life) => Math.min(life.lost?.t ?? Infinity, life.killedAt ?? Infinity, ...life.removals.map((r) => r.event.t));
const mustFailOver = (life: Life, ended: number) => !life.withdrawn && (life.lost !== undefined || life.killedAt !== undefined) && seenByALeader(life, ended);

const nameOf = (life: Life) => `${life.id} incarnation ${life.incarnation}`;

function livesOf(timeline: ChaosTimeline): Map<string, Life> {
  const lives = new Map<string, Life>();
  const life = (id: string, incarnation: string): Life => {
    let found = lives.get(incarnation);
    if (!found) lives.set(incarnation, (found = { id, incarnation, owner: undefined, lost: undefined, killedAt: undefined, withdrawn: false, removals: [], started: [], acks: [], skips: [], sightings: [] }));
    return found;
  };
  for (const p of timeline.processes) {
    const created = p.events.flatMap((e) => (e.type === 'announced' || e.type === 'reannounced' ? [e] : []));
    for (const e of created) life(p.name, e.incarnation).owner = p;
    for (const e of eventsOf(p, 'memberLost')) life(p.name, e.incarnation).lost ??= e;
    const last = created.at(-1);
    if (last) {
      const current = life(p.name, last.incarnation);
      if (p.killedAt !== undefined) current.killedAt = p.killedAt;
      else if (p.shutdownAt !== undefined && !current.lost) current.withdrawn = true;
    }
    for (const e of eventsOf(p, 'memberAdded')) life(e.id, e.incarnation).sightings.push({ by: p, t: e.t });
    for (const e of eventsOf(p, 'failoverStarted')) life(e.id, e.incarnation).started.push({ by: p, event: e });
    for (const e of eventsOf(p, 'acknowledged')) life(e.id, e.incarnation).acks.push({ by: p, event: e });
    for (const e of eventsOf(p, 'skipped')) life(e.id, e.incarnation).skips.push({ by: p, event: e });
  }
  for (const p of timeline.processes) for (const e of eventsOf(p, 'memberRemoved')) {
    const removed = life(e.id, e.incarnation);
    if (removed.owner !== p) removed.removals.push({ by: p, event: e });
  }
  return lives;
}

function exactlyOnce(life: Life, at: (t: number) => string): string[] {
  const found: string[] = [];
  const acks = [...life.acks].sort((a, b) => a.event.t - b.event.t);
  if (acks.length > 1) found.push(`failed over twice: ${nameOf(life)} acknowledged ${acks.length} times (${acks.map((a) => `${describeHolder(a.by)} token ${a.event.token} at ${at(a.event.t)}`).join(', ')})`);
  const firstAck = acks[0];
  for (const s of life.started) {
    if (firstAck && s.event.t > firstAck.event.t) found.push(`failover run after its acknowledgement: ${describeHolder(s.by)} started ${nameOf(life)} at ${at(s.event.t)} (token ${s.event.token}, resumed ${s.event.resumed}), acknowledged at ${at(firstAck.event.t)} by ${describeHolder(firstAck.by)}`);
  }
  const ended = endOf(life);
  for (const s of life.started) {
    if (s.event.t < ended) found.push(`failed over while it lived: ${describeHolder(s.by)} started ${nameOf(life)} at ${at(s.event.t)}, before it was lost, killed or removed in any view${ended === Infinity ? '' : ` (${at(ended)})`}`);
  }

  const skip = life.skips[0];
  const how = skip ? `; ${describeHolder(skip.by)} recorded it skipped, as a graceful withdraw, at ${at(skip.event.t)}` : '';
  // The recipe's bound (docs/failover.md): an incarnation no leader saw alive, in its view during its term, may go unfailed-over.
  if (mustFailOver(life, ended) && acks.length === 0) found.push(`never failed over: ${nameOf(life)} ended (${life.lost ? `lost, ${life.lost.reason}, at ${at(life.lost.t)}` : `SIGKILL at ${at(life.killedAt!)}`}) and no leader acknowledged its failover by the end of the run${how}`);
  return found;
}

/** Some leader's view held the incarnation during one of its terms, before the incarnation ended. */
function seenByALeader(life: Life, ended: number): boolean {
  return life.sightings.some(({ by, t }) => {
    const gone = Math.min(by.killedAt ?? Infinity, by.exitedAt ?? Infinity);
    return eventsOf(by, 'elected').some((e) => {
      if (!e.valid) return false;
      const lost = eventsOf(by, 'lost').find((l) => l.token === e.token && l.t >= e.t);
      return Math.max(e.t, t) < Math.min(ended, lost?.t ?? Infinity, gone);
    });
  });
}

function lateWrites(life: Life, work: readonly WorkWrite[], at: (t: number) => string): string[] {
  if (life.started.length === 0) return [];
  const began = life.started.reduce((first, s) => (s.event.t < first.event.t ? s : first));
  return work
    .filter((w) => w.incarnation === life.incarnation && w.accepted && w.decidedAt > began.event.t)
    .map((w) => `write accepted after its failover began: ${w.writer} as ${nameOf(life)} read alive at ${at(w.readAt)}, accepted at ${at(w.decidedAt)}; ${describeHolder(began.by)} began its failover at ${at(began.event.t)}`);
}

/** The worker read itself alive as `life` at or after a peer's `removed` of it: a sample, the last true sample before a change, or a work write. */
function aliveAfterRemoved(life: Life, at: (t: number) => string): string[] {
  const owner = life.owner;
  if (!owner || life.removals.length === 0) return [];
  const first = life.removals.reduce((a, b) => (b.event.t < a.event.t ? b : a));
  const removedAt = first.event.t;
  const readings: number[] = [];
  let previous: Of<'alive'> | undefined;
  for (const e of eventsOf(owner, 'alive')) {
    if (e.alive && e.incarnation === life.incarnation) readings.push(e.t);
    if (previous?.alive && previous.incarnation === life.incarnation && e.lastAlive !== undefined) readings.push(e.lastAlive);
    previous = e;
  }
  for (const e of eventsOf(owner, 'work')) if (e.incarnation === life.incarnation) readings.push(e.t);
  const latest = Math.max(...readings);
  if (latest < removedAt) return [];
  return [`alive after removed: ${describeHolder(owner)} read itself alive as ${nameOf(life)} at ${at(latest)}; ${describeHolder(first.by)} saw it removed (${first.event.reason}) at ${at(removedAt)}`];
}

function lostBeforeRemoved(fault: ChaosFault, lives: Map<string, Life>, timeline: ChaosTimeline, at: (t: number) => string): string[] {
  if ((fault.kind !== 'worker-cut' && fault.kind !== 'worker-pause') || fault.incarnation === undefined) return [];
  const life = lives.get(fault.incarnation);
  const owner = life?.owner;
  if (!life || !owner) return [];
  const blind: Window[] = blindWindows(owner, timeline.endedAt);
  const found: string[] = [];
  for (const r of life.removals) {
    if (life.lost && life.lost.t < r.event.t) continue;
    if (blind.some((w) => w.from <= r.event.t && r.event.t <= w.to)) continue;
    found.push(`removed before lost: in the ${fault.kind} at ${at(fault.at)}, ${describeHolder(r.by)} saw ${nameOf(life)} removed (${r.event.reason}) at ${at(r.event.t)}; ${life.lost ? `its lost came at ${at(life.lost.t)}` : 'it never reported lost'}`);
  }
  if (life.removals.length > 0 && !life.lost && life.killedAt === undefined && !found.length) found.push(`removed, never lost: in the ${fault.kind} at ${at(fault.at)}, ${nameOf(life)} was removed in ${life.removals.length} views and its worker never reported lost`);
  return found;
}
