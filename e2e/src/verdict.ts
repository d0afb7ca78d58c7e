import type { IncarnationRecord, StampedEvent } from './candidate-handle.js';
import type { Fenced } from './protocol.js';
import { blindWindows, describeHolder, termsOf, uncovered, type Term, type Timeline, type Window } from './timeline.js';

/**
 * How much longer than the renew deadline a SIGSTOP must last before any
 * write after it is certainly past the deadline: the signal is sent just after
 * its timestamp is taken. Milliseconds.
 */
const SIGNAL_MARGIN_MS = 50;

const FENCED: readonly Fenced[] = ['election', 'lock'];

/**
 * Everything the soak must never see, as one message each (empty: the run
 * passed). The checks, on the merged CLOCK_MONOTONIC timeline:
 * - a candidate crash: a process that exited without being SIGKILLed or asked to shut down, or reported a fatal error;
 * - two holders at one instant: two processes' terms (or lock holds) overlapping outside both processes' blind windows (paused, stalled); a term open across a SIGSTOP longer than the renew deadline ends at the SIGCONT;
 * - a fencing token not above the last: terms, ordered by their `elected` instant, must carry strictly increasing tokens;
 * - a stale write accepted: the resource accepted a write whose token was read after a term with a higher token had begun;
 * - a write past the deadline: a write with a token read after a SIGSTOP longer than the renew deadline that began during that term;
 * - a write with a token its writer was never announced;
 * - a lost or phantom member event: per observer, `added` for a member present or unknown, `updated`/`removed` for one absent, or a view that differs from what `members()` returned at a checkpoint;
 * - an update raced by a withdraw that was told the wrong thing: rejected with CLOSED but seen written, or (where the watch tells of every change) resolved but never seen —
 *   in pod liveness only when some observer held the member when the race began and saw the withdraw end it (see {@link owedTheUpdate});
 * - in pod liveness, a member removed while its pod stayed Ready: an observer saw a member expire more often than its pod went not Ready.
 */
export function judge(timeline: Timeline): string[] {
  const at = (t: number) => `+${((t - timeline.startedAt) / 1000).toFixed(3)} s`;
  const violations: string[] = [];
  const terms: Record<Fenced, Term[]> = { election: [], lock: [] };
  for (const record of timeline.incarnations) {
    violations.push(...crashes(record, at));
    for (const of of FENCED) terms[of].push(...termsOf(record, of, timeline.endedAt).map((term) => endAtLongPause(term, record, timeline.renewDeadlineMs[of])));
    violations.push(...memberViolations(record, timeline.names));
  }
  const blind = new Map(timeline.incarnations.map((r) => [r, blindWindows(r, timeline.endedAt)]));
  for (const of of FENCED) {
    const sorted = terms[of].sort((a, b) => a.from - b.from);
    violations.push(...overlaps(sorted, blind, at), ...tokenOrder(sorted, at));
  }
  violations.push(...writeViolations(timeline, terms, at), ...racedUpdates(timeline), ...podLiveness(timeline));
  return violations;
}

/**
 * A term open when a SIGSTOP began that lasted past the renew deadline ends at
 * the SIGCONT at the latest: by the contract the holder reads itself as no
 * longer holding from then, whichever overdue timer reports the loss first.
 */
function endAtLongPause(term: Term, record: IncarnationRecord, renewDeadlineMs: number): Term {
  for (const pause of record.pauses) {
    if (pause.to === undefined || pause.from < term.from || pause.from >= term.to) continue;
    if (pause.to - pause.from > renewDeadlineMs + SIGNAL_MARGIN_MS && pause.to < term.to) return { ...term, to: pause.to };
  }
  return term;
}

/** A process that exited without being SIGKILLed or asked to shut down, or reported a fatal error (`{ type: 'fatal', message }`). Shared with the failover chaos's verdict. */
export function crashes<E extends StampedEvent>(record: IncarnationRecord<E>, at: (t: number) => string): string[] {
  const found: string[] = [];
  const fatal = record.events.find((e) => e.type === 'fatal') as (StampedEvent & { message: string }) | undefined;
  if (fatal) found.push(`candidate crash: ${describeHolder(record)} reported a fatal error at ${at(fatal.t)}: ${fatal.message}`);
  const { exit } = record;
  const expected = record.killedAt !== undefined || (record.shutdownAt !== undefined && exit?.code === 0);
  if (exit && !expected && !fatal) found.push(`candidate crash: ${describeHolder(record)} exited at ${at(record.exitedAt!)} with ${JSON.stringify(exit)}; see ${record.logFile}`);
  return found;
}

function overlaps(sorted: readonly Term[], blind: Map<IncarnationRecord, Window[]>, at: (t: number) => string): string[] {
  const found: string[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    for (let j = i + 1; j < sorted.length && sorted[j]!.from < a.to; j++) {
      const b = sorted[j]!;
      if (b.holder === a.holder) continue;
      const span = { from: b.from, to: Math.min(a.to, b.to) };
      const exposed = uncovered(span, [...blind.get(a.holder)!, ...blind.get(b.holder)!]);
      if (exposed > 0) {
        const noun = a.of === 'election' ? 'leaders' : 'lock holders';
        found.push(`two ${noun} at once: ${describeHolder(a.holder)} (token ${a.token}, ${at(a.from)} to ${at(a.to)}) and ${describeHolder(b.holder)} (token ${b.token}, from ${at(b.from)}) overlap ${exposed.toFixed(1)} ms while neither was paused`);
      }
    }
  }
  return found;
}

function tokenOrder(sorted: readonly Term[], at: (t: number) => string): string[] {
  const found: string[] = [];
  for (let i = 1; i < sorted.length; i++) {
    const [before, term] = [sorted[i - 1]!, sorted[i]!];
    if (term.token <= before.token) found.push(`fencing token not above the last: ${term.of} token ${term.token} of ${describeHolder(term.holder)} at ${at(term.from)} follows token ${before.token} of ${describeHolder(before.holder)} at ${at(before.from)}`);
  }
  return found;
}

function writeViolations(timeline: Timeline, terms: Record<Fenced, Term[]>, at: (t: number) => string): string[] {
  const found: string[] = [];
  // Per resource: term starts in time order with the highest token begun so far.
  const begun = Object.fromEntries(
    FENCED.map((of) => {
      let highest = 0;
      return [of, terms[of].map((t) => ({ from: t.from, highest: (highest = Math.max(highest, t.token)) }))];
    }),
  ) as Record<Fenced, { from: number; highest: number }[]>;
  const announced = new Map(FENCED.flatMap((of) => terms[of].map((t) => [`${of}/${describeHolder(t.holder)}/${t.token}`, t] as const)));
  for (const w of timeline.writes) {
    const who = `${w.writer}#${w.incarnation}`;
    const term = announced.get(`${w.of}/${who}/${w.token}`);
    if (!term) {
      found.push(`a write with a token never announced: ${who} wrote ${w.of} token ${w.token} read at ${at(w.readAt)} (${w.accepted ? 'accepted' : 'rejected'})`);
      continue;
    }
    const highest = highestBegunBefore(begun[w.of], w.readAt);
    if (w.accepted && highest > w.token) found.push(`stale write accepted: ${who} wrote ${w.of} token ${w.token}, read at ${at(w.readAt)}, after token ${highest} had begun`);
    for (const pause of term.holder.pauses) {
      if (pause.to === undefined || pause.to - pause.from <= timeline.renewDeadlineMs[w.of] + SIGNAL_MARGIN_MS) continue;
      if (term.from < pause.from && w.readAt >= pause.to) {
        found.push(`a write past the renew deadline: ${who} wrote ${w.of} token ${w.token} read at ${at(w.readAt)}, after a SIGSTOP of ${(pause.to - pause.from).toFixed(0)} ms (${at(pause.from)} to ${at(pause.to)}) within that term (${w.accepted ? 'accepted' : 'rejected'})`);
      }
    }
  }
  return found;
}

function highestBegunBefore(starts: readonly { from: number; highest: number }[], t: number): number {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid]!.from < t) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? 0 : starts[lo - 1]!.highest;
}

function memberViolations(record: IncarnationRecord, names: readonly string[]): string[] {
  const found: string[] = [];
  const who = describeHolder(record);
  const view = new Map<string, string>();
  // What each event changed, to see the view as it was right after an earlier event.
  const undo: { n: number; id: string; previous: string | undefined }[] = [];
  const set = (n: number, id: string, payload: string | undefined) => {
    undo.push({ n, id, previous: view.get(id) });
    if (payload === undefined) view.delete(id);
    else view.set(id, payload);
  };
  for (const e of record.events) {
    if (e.type === 'memberAdded') {
      if (!names.includes(e.id)) found.push(`phantom member: ${who} saw ${e.id} added, which no candidate announced`);
      if (view.has(e.id)) found.push(`phantom member event: ${who} saw ${e.id} added twice (event ${e.n})`);
      set(e.n, e.id, JSON.stringify(e.payload));
    } else if (e.type === 'memberUpdated' || e.type === 'memberRemoved') {
      if (!view.has(e.id)) found.push(`phantom member event: ${who} saw ${e.id} ${e.type === 'memberUpdated' ? 'updated' : 'removed'} without having seen it added (event ${e.n})`);
      set(e.n, e.id, e.type === 'memberUpdated' ? JSON.stringify(e.payload) : undefined);
    } else if (e.type === 'members') {
      const then = new Map(view);
      for (let i = undo.length - 1; i >= 0 && undo[i]!.n > e.after; i--) {
        const { id, previous } = undo[i]!;
        if (previous === undefined) then.delete(id);
        else then.set(id, previous);
      }
      const listed = new Map(e.members.map((m) => [m.id, JSON.stringify(m.payload)]));
      const differs = [...new Set([...then.keys(), ...listed.keys()])].filter((id) => then.get(id) !== listed.get(id));
      if (differs.length > 0) {
        found.push(`lost or phantom member event: ${who} at checkpoint ${e.checkpoint}: its events say ${describeView(then, differs)}, members() says ${describeView(listed, differs)}`);
      }
    }
  }
  return found;
}

const describeView = (view: Map<string, string>, ids: string[]) => ids.map((id) => `${id}=${view.get(id) ?? 'absent'}`).join(', ');

/** Issue 12, item 2: an update overtaken by a withdraw rejects with CLOSED, and one that resolves was written. */
function racedUpdates(timeline: Timeline): string[] {
  const found: string[] = [];
  const seen = new Set<string>();
  for (const r of timeline.incarnations) {
    for (const e of r.events) if (e.type === 'memberAdded' || e.type === 'memberUpdated' || e.type === 'memberRemoved') seen.add(`${e.id}/${JSON.stringify(e.payload)}`);
  }
  for (const r of timeline.incarnations) {
    for (const e of r.events) {
      if (e.type !== 'raced') continue;
      const payload = JSON.stringify(e.payload);
      const wasSeen = seen.has(`${r.name}/${payload}`);
      if (e.outcome === 'CLOSED' && wasSeen) found.push(`an update rejected with CLOSED was written: ${describeHolder(r)}'s payload ${payload} was seen by a watcher`);
      if (e.outcome !== 'written' || wasSeen || !timeline.watchSeesEveryChange) continue;
      const owed = timeline.podReadiness ? owedTheUpdate(timeline, r, e) : { by: undefined };
      if (owed) found.push(`an update that resolved was never written: no watcher saw ${describeHolder(r)}'s payload ${payload} before its withdraw${owed.by ? `, which ${describeHolder(owed.by)} saw end ${r.name} while it held it` : ''}`);
    }
  }
  return found;
}

/**
 * Pod liveness: a member is alive while its pod is Ready, as each observer's
 * view of its EndpointSlice says, so a member no view held (its pod not Ready
 * yet, or gone not Ready) has its update in no view either. The update was
 * due to be seen by an observer that held the member when the race began and
 * then saw the withdraw end it (`removed`, `deleted`): that observer saw every
 * state of the record up to the withdraw mark, the update's among them. One
 * whose view lost the member another way first (expired: its pod went not
 * Ready; replaced: a relist coalesced the delete) may have missed it. The race
 * began when the candidate says (`from`), else at its withdraw fault; knowing
 * neither, the update was due (undefined `by`). Undefined: no observer owed it.
 */
function owedTheUpdate(timeline: Timeline, target: IncarnationRecord, raced: StampedEvent & { from?: number }): { by: IncarnationRecord | undefined } | undefined {
  const fault = timeline.faults.filter((f) => f.kind === 'withdraw' && f.target === target.name && f.at <= raced.t).at(-1);
  const from = raced.from ?? fault?.at;
  if (from === undefined) return { by: undefined };
  const by = timeline.incarnations.find((o) => sawTheWithdrawEnd(o, target.name, from));
  return by && { by };
}

/** Whether `observer` held member `id` at `from` and its first removal of it after that was a withdraw's (`deleted`). */
function sawTheWithdrawEnd(observer: IncarnationRecord, id: string, from: number): boolean {
  let held = false;
  for (const e of observer.events) {
    if ((e.type !== 'memberAdded' && e.type !== 'memberUpdated' && e.type !== 'memberRemoved') || e.id !== id) continue;
    if (e.t <= from) held = e.type !== 'memberRemoved';
    else if (!held) return false;
    else if (e.type === 'memberRemoved') return e.reason === 'deleted';
  }
  return false;
}

/**
 * Pod liveness: a member is alive while its pod is Ready, so it expires only
 * after its pod went not Ready (a SIGKILL, a SIGSTOP that failed the probe). An
 * observer may see a member expire, and come back when its pod is Ready again
 * (a killed candidate restarts in the same pod), but never more often than its
 * pod went from Ready to not Ready in the whole run: a member whose pod stays
 * Ready is never removed. (Counted rather than matched in time: the observer's
 * watch and the coordinator's see the change at different moments.)
 */
function podLiveness(timeline: Timeline): string[] {
  const readiness = timeline.podReadiness;
  if (!readiness) return [];
  const wentNotReady = (name: string) => (readiness[name] ?? []).filter((c, i, all) => !c.ready && i > 0 && all[i - 1]!.ready).length;
  const found: string[] = [];
  for (const r of timeline.incarnations) {
    const expired = new Map<string, number>();
    for (const e of r.events) if (e.type === 'memberRemoved' && e.reason === 'expired') expired.set(e.id, (expired.get(e.id) ?? 0) + 1);
    for (const [id, times] of expired) {
      const allowed = wentNotReady(id);
      if (times > allowed) found.push(`a member removed while its pod stayed Ready: ${describeHolder(r)} saw ${id} expire ${times} times, its pod went not Ready ${allowed} times`);
    }
  }
  return found;
}
