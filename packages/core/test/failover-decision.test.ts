import { describe, expect, it } from 'vitest';
import { decide, type FailoverAction, type FailoverFacts } from '../src/failover-decision.js';
import type { FailoverState } from '../src/failover-record.js';

const TERM = { token: 5, includeWithdrawn: false, retentionMs: 60_000 };
const base: FailoverFacts = { record: undefined, present: undefined, removal: undefined, absentForMs: 0, running: false, resolved: false, doneForMs: 0, overCap: false };
const seen: FailoverState = { state: 'seen', lastPayload: 'p0', leaseMs: 20_000 };
const claimed = (token: number, claims = 1): FailoverState => ({ state: 'claimed', token, reason: 'expired', lastPayload: 'p1', claims });
const acked = (token: number): FailoverState => ({ state: 'acked', token, reason: 'expired', claims: 1 });
const skipped = (token: number): FailoverState => ({ state: 'skipped', token, reason: 'withdrawn' });
const alive = { payload: 'p2', leaseMs: 20_000 };

// One row per transition: [what, facts, term overrides, action].
const table: [string, Partial<FailoverFacts>, Partial<typeof TERM>, FailoverAction][] = [
  ['no record, present → note it seen', { present: alive }, {}, { do: 'note' }],
  ['no record, absent, no removal seen → nothing', {}, {}, { do: 'nothing' }],
  ['no record, removal seen → claim (a member that came and went before it was noted)', { removal: { reason: 'expired', payload: 'p3' } }, {}, { do: 'claim', reason: 'expired', lastPayload: 'p3', resumed: false }],
  ['no record, withdrawn (its mark seen) → skip', { removal: { reason: 'withdrawn', payload: 'p3' } }, {}, { do: 'skip', reason: 'withdrawn' }],
  ['no record, deleted with no withdraw mark seen → claim (a crash whose expiry mark was folded away, or an older member)', { removal: { reason: 'deleted', payload: 'p3' } }, {}, { do: 'claim', reason: 'deleted', lastPayload: 'p3', resumed: false }],
  ['seen, present → nothing', { record: seen, present: alive }, {}, { do: 'nothing' }],
  ['seen, present again after a removal (renewed before the mark landed) → nothing', { record: seen, present: alive, removal: { reason: 'expired', payload: 'p2' } }, {}, { do: 'nothing' }],
  ['seen, removed (expired) → claim', { record: seen, removal: { reason: 'expired', payload: 'p4' } }, {}, { do: 'claim', reason: 'expired', lastPayload: 'p4', resumed: false }],
  ['seen, removed (replaced) → claim', { record: seen, removal: { reason: 'replaced', payload: 'p4' } }, {}, { do: 'claim', reason: 'replaced', lastPayload: 'p4', resumed: false }],
  ['seen, removed (corrupt) → claim', { record: seen, removal: { reason: 'corrupt', payload: undefined } }, {}, { do: 'claim', reason: 'corrupt', lastPayload: undefined, resumed: false }],
  ['seen, withdrawn (its mark seen) → skip', { record: seen, removal: { reason: 'withdrawn', payload: 'p4' } }, {}, { do: 'skip', reason: 'withdrawn' }],
  ['seen, withdrawn, includeWithdrawn → claim', { record: seen, removal: { reason: 'withdrawn', payload: 'p4' } }, { includeWithdrawn: true }, { do: 'claim', reason: 'withdrawn', lastPayload: 'p4', resumed: false }],
  ['seen, deleted with no withdraw mark seen → claim, with or without includeWithdrawn', { record: seen, removal: { reason: 'deleted', payload: 'p4' } }, {}, { do: 'claim', reason: 'deleted', lastPayload: 'p4', resumed: false }],
  ['seen, absent without a removal seen, less than its lease → wait the rest', { record: seen, absentForMs: 5_000 }, {}, { do: 'wait', ms: 15_000 }],
  ['seen, absent for its lease → claim as unseen, with the payload it was seen with', { record: seen, absentForMs: 20_000 }, {}, { do: 'claim', reason: 'unseen', lastPayload: 'p0', resumed: false }],
  ['claimed by an earlier term → claim again, resumed', { record: claimed(3) }, {}, { do: 'claim', reason: 'expired', lastPayload: 'p1', resumed: true }],
  ['claimed by an earlier term, even with the incarnation present → claim again', { record: claimed(3), present: alive }, {}, { do: 'claim', reason: 'expired', lastPayload: 'p1', resumed: true }],
  ['claimed by this term, not running → run', { record: claimed(5) }, {}, { do: 'run', resumed: false }],
  ['claimed by this term after earlier claims → run, resumed', { record: claimed(5, 2) }, {}, { do: 'run', resumed: true }],
  ['claimed by this term, running → nothing', { record: claimed(5), running: true }, {}, { do: 'nothing' }],
  ['claimed by this term, handler resolved → ack', { record: claimed(5), resolved: true }, {}, { do: 'ack' }],
  ['claimed by a later term → deposed', { record: claimed(6), resolved: true }, {}, { do: 'deposed' }],
  ['acked by a later term → deposed', { record: acked(6) }, {}, { do: 'deposed' }],
  ['skipped by a later term → deposed', { record: skipped(7) }, {}, { do: 'deposed' }],
  ['acked → never run again: wait for its retention', { record: acked(3), doneForMs: 10_000, removal: { reason: 'expired', payload: 'x' } }, {}, { do: 'wait', ms: 50_000 }],
  ['acked, its removal seen again and resolved → still no run, no ack', { record: acked(5), resolved: true, removal: { reason: 'expired', payload: 'x' } }, {}, { do: 'wait', ms: 60_000 }],
  ['skipped → wait for its retention', { record: skipped(5) }, {}, { do: 'wait', ms: 60_000 }],
  ['acked past its retention → forget', { record: acked(5), doneForMs: 60_000 }, {}, { do: 'forget' }],
  ['done, among the oldest beyond maxRetained → forget', { record: skipped(4), overCap: true }, {}, { do: 'forget' }],
  ['corrupt → nothing (reported, left alone)', { record: 'corrupt', present: alive }, {}, { do: 'nothing' }],
];

describe('failover decide (pure)', () => {
  it.each(table)('%s', (_, facts, term, action) => {
    expect(decide({ ...base, ...facts }, { ...TERM, ...term })).toEqual(action);
  });
});
