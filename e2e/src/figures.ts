import { percentile } from '@rollcall/tools/testenv';
import { FAULT_KINDS, type FaultKind } from './faults.js';
import type { Timeline } from './timeline.js';

/** What one fault kind did to the election. */
export interface FaultFigures {
  applied: number;
  /** Applied to the leader (a server restart: whenever there was one). */
  onLeader: number;
  /** Of those, how many the leader survived (no new term before the next fault). */
  kept: number;
  /** Time from the fault to the next term's `elected`, milliseconds, for each fault on the leader that ended its term. */
  leaderless: number[];
}

/** The figures of one run, for the README. */
export interface Figures {
  backend: string;
  candidates: number;
  durationS: number;
  /** Election terms begun. */
  terms: number;
  /** Lock holds begun. */
  lockHolds: number;
  /** Announcements (`elected`, a lock) the process no longer read as valid when its listener ran: stale notifications, opening no term. */
  invalidAnnouncements: number;
  faults: Partial<Record<FaultKind, FaultFigures>>;
  writes: { accepted: number; rejected: number; failed: number };
  /** Updates raced by a withdraw, by outcome: `written`, `CLOSED`, or another error code. */
  raced: Record<string, number>;
  /** Sampling gaps over the stall threshold outside SIGSTOPs: the scheduler's doing. */
  stalls: { count: number; maxMs: number };
  /** Member events seen, summed over every observer; removals by reason (`expired`, `deleted`). */
  memberEvents: { added: number; updated: number; removed: Record<string, number> };
  violations: number;
}

export function figures(backend: string, candidates: number, timeline: Timeline, violations: number): Figures {
  const elected = timeline.incarnations.flatMap((r) => r.events.flatMap((e) => (e.type === 'elected' && e.valid !== false ? [e] : []))).sort((a, b) => a.t - b.t);
  const faults: Partial<Record<FaultKind, FaultFigures>> = {};
  timeline.faults.forEach((fault, i) => {
    const f = (faults[fault.kind] ??= { applied: 0, onLeader: 0, kept: 0, leaderless: [] });
    f.applied++;
    const { leader } = fault;
    // A withdraw is a member's business, not the election's.
    if (fault.kind === 'withdraw') return;
    if (!leader || (fault.kind !== 'server-restart' && fault.target !== leader.name)) return;
    f.onLeader++;
    const next = elected.find((e) => e.t > fault.at && e.token > leader.token);
    const before = timeline.faults[i + 1]?.at ?? timeline.endedAt;
    if (next && next.t < before) f.leaderless.push(next.t - fault.at);
    else f.kept++;
  });
  const stalls = timeline.incarnations.flatMap((r) =>
    r.events.flatMap((e) => (e.type === 'stall' && !r.pauses.some((p) => p.from < e.t && (p.to ?? Infinity) > e.from) ? [e.t - e.from] : [])),
  );
  const written = timeline.incarnations.flatMap((r) => r.events.flatMap((e) => (e.type === 'write' ? [e.outcome] : [])));
  return {
    backend,
    candidates,
    durationS: (timeline.endedAt - timeline.startedAt) / 1000,
    terms: elected.length,
    lockHolds: timeline.incarnations.reduce((sum, r) => sum + r.events.filter((e) => e.type === 'lockAcquired' && e.valid !== false).length, 0),
    invalidAnnouncements: timeline.incarnations.reduce((sum, r) => sum + r.events.filter((e) => (e.type === 'elected' || e.type === 'lockAcquired') && e.valid === false).length, 0),
    faults,
    writes: {
      accepted: timeline.writes.filter((w) => w.accepted).length,
      rejected: timeline.writes.filter((w) => !w.accepted).length,
      failed: written.filter((o) => o === 'failed').length,
    },
    raced: timeline.incarnations.reduce<Record<string, number>>((counts, r) => {
      for (const e of r.events) if (e.type === 'raced') counts[e.outcome] = (counts[e.outcome] ?? 0) + 1;
      return counts;
    }, {}),
    stalls: { count: stalls.length, maxMs: stalls.length === 0 ? 0 : Math.max(...stalls) },
    memberEvents: timeline.incarnations.reduce<Figures['memberEvents']>(
      (counts, r) => {
        for (const e of r.events) {
          if (e.type === 'memberAdded') counts.added++;
          else if (e.type === 'memberUpdated') counts.updated++;
          else if (e.type === 'memberRemoved') counts.removed[e.reason] = (counts.removed[e.reason] ?? 0) + 1;
        }
        return counts;
      },
      { added: 0, updated: 0, removed: {} },
    ),
    violations,
  };
}

const ms = (v: number) => (Number.isNaN(v) ? '–' : `${Math.round(v)} ms`);

/** The figures as printed by `npm run soak` and pasted into e2e/README.md. */
export function formatFigures(f: Figures): string {
  const lines = [
    `${f.backend}: ${f.candidates} candidates, ${f.durationS.toFixed(0)} s, ${f.terms} terms, ${f.lockHolds} lock holds, ${f.invalidAnnouncements} invalid announcements, ${f.violations} violations`,
    `writes: ${f.writes.accepted} accepted, ${f.writes.rejected} rejected (stale token), ${f.writes.failed} unanswered; stalls over 100 ms outside SIGSTOPs: ${f.stalls.count} (longest ${ms(f.stalls.maxMs)})`,
    `updates raced by a withdraw: ${Object.entries(f.raced).map(([outcome, n]) => `${n} ${outcome}`).join(', ') || 'none'}`,
    `member events seen (all observers): ${f.memberEvents.added} added, ${f.memberEvents.updated} updated, removed: ${Object.entries(f.memberEvents.removed).map(([reason, n]) => `${n} ${reason}`).join(', ') || 'none'}`,
    '',
    '| fault | applied | on the leader | leader kept its term | no leader after it, p50 | p99 | max |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const kind of FAULT_KINDS) {
    const k = f.faults[kind];
    if (!k) continue;
    const at = (p: number) => (k.leaderless.length === 0 ? NaN : percentile(k.leaderless, p));
    lines.push(`| ${kind} | ${k.applied} | ${k.onLeader} | ${k.kept} | ${ms(at(50))} | ${ms(at(99))} | ${ms(at(100))} |`);
  }
  return lines.join('\n');
}
