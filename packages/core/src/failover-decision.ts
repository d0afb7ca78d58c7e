import type { FailoverReason, FailoverState } from './failover-record.js';
import type { JsonValue } from './lease-record.js';

/** What one term knows of one incarnation when it syncs it. @internal */
export interface FailoverFacts {
  /** Its failover record: none, its state, or `corrupt` (unreadable). */
  record: FailoverState | 'corrupt' | undefined;
  /** Present in the role's view now (the view is listed): its payload and lease. */
  present: { payload: JsonValue | undefined; leaseMs: number } | undefined;
  /** Its removal as this term saw it: the reason and its last payload. */
  removal: { reason: FailoverReason; payload: JsonValue | undefined } | undefined;
  /** How long this term has seen its record `seen` while the incarnation was absent from the view. Milliseconds. */
  absentForMs: number;
  /** This term's handler for it is running. */
  running: boolean;
  /** This term's handler for it resolved and its ack is not written yet. */
  resolved: boolean;
  /** How long this term has seen its record done (`acked`, `skipped`). Milliseconds. */
  doneForMs: number;
  /** Done, and among the oldest beyond the role's `maxRetained`. */
  overCap: boolean;
}

/** The term's own side: its fencing token and the options. @internal */
export interface FailoverTermFacts {
  token: number;
  includeWithdrawn: boolean;
  retentionMs: number;
}

/** What a term does for one incarnation. @internal */
export type FailoverAction =
  | { do: 'nothing' }
  /** Sync it again after `ms`. */
  | { do: 'wait'; ms: number }
  /** Create its record `seen`, so a successor knows of it even if this leader dies before its removal is claimed. */
  | { do: 'note' }
  /** Write its record `claimed` under this term's token (create or compare-and-set); `resumed` when an earlier term claimed it. */
  | { do: 'claim'; reason: FailoverReason; lastPayload: JsonValue | undefined; resumed: boolean }
  /** Run the handler on this term's claim. */
  | { do: 'run'; resumed: boolean }
  /** Write `acked` on this term's claim: the handler resolved. */
  | { do: 'ack' }
  /** Write `skipped`: a graceful withdraw, seen as one, that is not handled. */
  | { do: 'skip'; reason: FailoverReason }
  /** Delete its done record: retention. */
  | { do: 'forget' }
  /** A later term wrote it: this term is over, whatever its lease says. */
  | { do: 'deposed' };

const nothing: FailoverAction = { do: 'nothing' };

/**
 * The one decision of a failover term for one incarnation, from its record
 * and what the term observed: pure, so every transition is a row of a table
 * (`failover-decision.test.ts`). Records are never run once `acked` or
 * `skipped`; a claim of an earlier term is taken over (resumed); one of a later
 * term deposes this one.
 */
export function decide(facts: FailoverFacts, term: FailoverTermFacts): FailoverAction {
  const { record } = facts;
  if (record === 'corrupt') return nothing; // not ours to guess at: reported, left alone
  if (record === undefined) {
    if (facts.present) return { do: 'note' };
    return facts.removal ? removed(facts.removal, term) : nothing;
  }
  if (record.state !== 'seen' && record.token > term.token) return { do: 'deposed' };
  switch (record.state) {
    case 'seen': {
      // Present wins over a removal seen earlier: the member renewed before its mark landed.
      if (facts.present) return nothing;
      if (facts.removal) return removed(facts.removal, term);
      // Gone with no removal seen (it went while no leader watched, or the view lags the record): a whole lease of absence first.
      if (facts.absentForMs < record.leaseMs) return { do: 'wait', ms: record.leaseMs - facts.absentForMs };
      return { do: 'claim', reason: 'unseen', lastPayload: record.lastPayload, resumed: false };
    }
    case 'claimed':
      if (record.token < term.token) return { do: 'claim', reason: record.reason, lastPayload: record.lastPayload, resumed: true };
      if (facts.resolved) return { do: 'ack' };
      if (facts.running) return nothing;
      return { do: 'run', resumed: record.claims > 1 };
    case 'acked':
    case 'skipped':
      if (facts.overCap || facts.doneForMs >= term.retentionMs) return { do: 'forget' };
      return { do: 'wait', ms: term.retentionMs - facts.doneForMs };
  }
}

/** Only a withdraw the leader saw as one is skipped: a delete it cannot explain may be a crash whose expiry mark it missed. */
function removed(removal: NonNullable<FailoverFacts['removal']>, term: FailoverTermFacts): FailoverAction {
  if (removal.reason === 'withdrawn' && !term.includeWithdrawn) return { do: 'skip', reason: 'withdrawn' };
  return { do: 'claim', reason: removal.reason, lastPayload: removal.payload, resumed: false };
}
