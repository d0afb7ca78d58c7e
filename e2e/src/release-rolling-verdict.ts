/**
 * The verdict of a rolling update from the release before incarnations, over
 * the soak's timeline, beside the soak's own and the rolling restart's
 * `membersKept`. Every member's payload names the process incarnation that
 * wrote it (`{ incarnation: n }`, the process `owner#n`, where `owner` is the
 * id up to its first `-`), so a member's life can be told from its writer:
 * a member ends only when its process does (killed, exited, or a successor of
 * the same name started to take it over).
 */
import type { IncarnationRecord } from './candidate-handle.js';
import type { CandidateEvent } from './protocol.js';
import { describeHolder, type Timeline } from './timeline.js';

/** A member that must have been failed over: `id` as written by its process incarnation `writer`. */
export interface ExpectedFailover {
  id: string;
  writer: number;
}

/** The process a member id belongs to: `c1` for `c1` and `c1-m2`. */
export const ownerOf = (id: string): string => id.split('-')[0]!;

/** The process incarnation that wrote `payload`, or undefined when it names none. */
export function writerOf(payload: unknown): number | undefined {
  const n = (payload as { incarnation?: unknown } | null | undefined)?.incarnation;
  return typeof n === 'number' ? n : undefined;
}

/** Whether process `name#writer` was still the running one of its name at `t`: not killed, not exited, no successor started. */
function stillRunning(incarnations: readonly IncarnationRecord[], name: string, writer: number, t: number): boolean {
  const own = incarnations.find((r) => r.name === name && r.incarnation === writer);
  if (!own || own.startedAt > t) return false;
  if (Math.min(own.killedAt ?? Infinity, own.exitedAt ?? Infinity, own.shutdownAt ?? Infinity) <= t) return false;
  return !incarnations.some((r) => r.name === name && r.incarnation > writer && r.startedAt <= t);
}

const at = (timeline: Timeline, t: number) => `+${((t - timeline.startedAt) / 1000).toFixed(3)} s`;

/**
 * No member is removed from a view while the process that wrote it runs on,
 * not replaced: a `removed` is for a member whose process was killed, exited
 * or had its successor started (which takes the id over as a new incarnation).
 * Today's guarantee, kept through the update: a member that did not restart is
 * never removed-then-added. Judged from `from` to `until`.
 */
export function liveMembersStay(timeline: Timeline, from: number, until: number): string[] {
  const found: string[] = [];
  for (const record of timeline.incarnations) {
    for (const e of record.events as CandidateEvent[]) {
      if (e.type !== 'memberRemoved' || e.t < from || e.t > until) continue;
      const writer = writerOf(e.payload);
      if (writer !== undefined && stillRunning(timeline.incarnations, ownerOf(e.id), writer, e.t)) {
        found.push(`a live member was removed: ${describeHolder(record)} saw ${e.id}${e.incarnation ? ` (incarnation ${e.incarnation})` : ''} removed (${e.reason}) at ${at(timeline, e.t)} while ${ownerOf(e.id)}#${writer}, which wrote it, ran on unreplaced`);
      }
    }
  }
  return found;
}

/**
 * Failover across the update: no incarnation's handler starts twice unless
 * resumed (a leader that ended before acknowledging), none is acknowledged
 * twice, none is of a member whose writer still runs unreplaced, and each of
 * `expected` (members replaced while every process ran this release) was
 * started and acknowledged.
 */
export function failoverOnce(timeline: Timeline, expected: readonly ExpectedFailover[]): string[] {
  const found: string[] = [];
  const started = new Map<string, number>();
  const acked = new Map<string, number>();
  /** The writer each started incarnation's last payload names. */
  const writers = new Map<string, { id: string; writer: number }>();
  for (const record of timeline.incarnations) {
    for (const e of record.events as CandidateEvent[]) {
      if (e.type === 'failoverStarted') {
        const key = `${e.id}@${e.incarnation}`;
        if (!e.resumed) started.set(key, (started.get(key) ?? 0) + 1);
        if (started.get(key)! > 1 && !e.resumed) found.push(`failed over twice: ${key} started again by ${describeHolder(record)} at ${at(timeline, e.t)} (token ${e.token}), not as resumed`);
        const writer = writerOf(e.lastPayload);
        if (writer !== undefined) {
          writers.set(key, { id: e.id, writer });
          if (stillRunning(timeline.incarnations, ownerOf(e.id), writer, e.t)) {
            found.push(`a live member was failed over: ${describeHolder(record)} started ${key} (${e.reason}) at ${at(timeline, e.t)} while ${ownerOf(e.id)}#${writer}, which wrote it, ran on unreplaced`);
          }
        }
      } else if (e.type === 'failoverAcknowledged') {
        const key = `${e.id}@${e.incarnation}`;
        acked.set(key, (acked.get(key) ?? 0) + 1);
        if (acked.get(key) === 2) found.push(`acknowledged twice: ${key}, the second by ${describeHolder(record)} at ${at(timeline, e.t)}`);
      }
    }
  }
  for (const { id, writer } of expected) {
    const keys = [...writers].filter(([, w]) => w.id === id && w.writer === writer).map(([key]) => key);
    if (keys.length === 0) found.push(`never failed over: ${id} as ${ownerOf(id)}#${writer} wrote it, replaced while every process ran this release`);
    else if (!keys.some((key) => acked.has(key))) found.push(`never acknowledged: ${keys.join(', ')}`);
  }
  return found;
}

/**
 * An `updated` never spans two incarnations, in the views of this release
 * (whose member events carry the incarnation): each `updated` names the
 * incarnation the same view last had for that id.
 */
export function updatesWithinIncarnation(timeline: Timeline): string[] {
  const found: string[] = [];
  for (const record of timeline.incarnations) {
    const last = new Map<string, string | undefined>();
    for (const e of record.events as CandidateEvent[]) {
      if (e.type === 'memberAdded') last.set(e.id, e.incarnation);
      else if (e.type === 'memberRemoved') last.delete(e.id);
      else if (e.type === 'memberUpdated' && e.incarnation !== undefined) {
        const before = last.get(e.id);
        if (before !== undefined && before !== e.incarnation) found.push(`an updated spans two incarnations: ${describeHolder(record)} saw ${e.id} updated from incarnation ${before} to ${e.incarnation} at ${at(timeline, e.t)}`);
        last.set(e.id, e.incarnation);
      }
    }
  }
  return found;
}

/**
 * How often a view saw a member updated by another process than the one that
 * last wrote it: a predecessor of the release before incarnations, still
 * heartbeating, taking its successor's record back (a figure, not a violation:
 * the old release cannot know it was superseded).
 */
export function updatesAcrossWriters(timeline: Timeline): number {
  let count = 0;
  for (const record of timeline.incarnations) {
    const last = new Map<string, number | undefined>();
    for (const e of record.events as CandidateEvent[]) {
      if (e.type === 'memberRemoved') last.delete(e.id);
      else if (e.type === 'memberAdded' || e.type === 'memberUpdated') {
        const writer = writerOf(e.payload);
        if (e.type === 'memberUpdated' && last.has(e.id) && writer !== undefined && last.get(e.id)! > writer) count++;
        last.set(e.id, writer);
      }
    }
  }
  return count;
}
