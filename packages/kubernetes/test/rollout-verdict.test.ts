import { describe, expect, it } from 'vitest';
import type { FollowedLog } from '@rollcall/tools/testenv';
import { judgeRollout } from './real-node/rollout-verdict.js';

const line = (at: number, event: string, fields: object = {}) => JSON.stringify({ at: new Date(at).toISOString(), event, ...fields });
const log = (pod: string, ended: boolean, ...lines: string[]): FollowedLog => ({ pod, start: 0, ended, lines });

describe('the rolling update verdict', () => {
  const old = log('a', true, line(0, 'announced', { identity: 'a' }), line(10, 'elected', { fencingToken: 1 }), line(100, 'stopping'), line(101, 'leadershipLost', { reason: 'closed' }), line(102, 'stopped'));
  const next = log('b', false, line(50, 'announced', { identity: 'b' }), line(105, 'elected', { fencingToken: 2 }));
  const clean = { viewAtStart: new Set(['a']), events: [{ type: 'added' as const, id: 'b' }, { type: 'removed' as const, id: 'a', reason: 'deleted' }], viewAtEnd: new Set(['b']) };

  it('passes a handover', () => {
    expect(judgeRollout({ logs: [old, next], ...clean })).toEqual([]);
  });

  it('finds two leaders at once, a token that did not rise, a crash, phantoms, a ghost and a lost event', () => {
    const early = log('b', false, line(50, 'announced', { identity: 'b' }), line(90, 'elected', { fencingToken: 1 }));
    expect(judgeRollout({ logs: [old, early], ...clean })).toEqual([
      'two leaders at once: a (token 1) still leading when b (token 1) was elected',
      'fencing token 1 of b not above 1 of a',
    ]);
    const crashed = log('a', true, line(0, 'announced', { identity: 'a' }), line(10, 'elected', { fencingToken: 1 }));
    expect(judgeRollout({ logs: [crashed, next], ...clean })).toEqual([
      'a (pod a) ended without a graceful stop',
      'a exited while leading (token 1) without reporting the loss',
      // its exit time is unknown: its term is taken as open
      'two leaders at once: a (token 1) still leading when b (token 2) was elected',
    ]);
    expect(judgeRollout({ logs: [old, next], ...clean, events: [{ type: 'added', id: 'b' }, { type: 'added', id: 'b' }, { type: 'removed', id: 'a', reason: 'expired' }] })).toEqual([
      'phantom: added b, already a member',
      'a stopped gracefully but was removed as expired',
    ]);
    expect(judgeRollout({ logs: [old, next], ...clean, events: [{ type: 'added', id: 'b' }] })).toEqual([
      'ghost: a stopped but is still a member',
      'lost event: the stream\'s view [a,b] is not members() [b]',
    ]);
  });
});
