import type { ConnectionEvents, Registry } from '@rollcall/core';
import { describe, expect, it } from 'vitest';
import { skipReason } from '../capabilities.js';
import { observeFor, waitFor } from '../wait-for.js';
import { logMembers, type Harness } from './harness.js';

type StateEvent = { type: keyof ConnectionEvents; at: number; after?: string };

function logStates(registry: Registry): StateEvent[] {
  const states: StateEvent[] = [];
  for (const type of ['connected', 'suspended', 'lost', 'reconnected'] as const) {
    registry.on(type, (event) => states.push({ type, at: performance.now(), ...('after' in event ? { after: event.after } : {}) }));
  }
  return states;
}

/** Disconnects: connection states, and views that come back with exactly the difference. */
export function connectionCases(h: Harness): void {
  const { timings } = h;
  const bound = timings.watchBoundMs;
  const m = timings.member;
  /** How long after its connection is cut a registry with a heartbeating member must notice. */
  const noticeMs = m.heartbeatIntervalMs + timings.requestTimeoutMs + bound;
  const lostAfterMs = Math.max(timings.election.leaseDurationMs, timings.lock.leaseDurationMs, m.leaseDurationMs);

  describe('disconnects', () => {
    if (!h.capabilities.partition) {
      const why = skipReason(h.backend, 'partition', '');
      for (const title of [
        'connection states: suspended, then reconnected',
        'connection states: lost after every lease has expired, then reconnected',
        'no lost or phantom member events across a disconnect',
        'a member cut off past its lease is lost by its own clock before its peers remove it, and comes back as a new incarnation',
        'an observer cut off while the leader changes reports the current leader when healed',
      ]) {
        it.skip(`${why}${title}`, () => {});
      }
      it.skip(`${why}a relist after compaction emits exactly the difference`, () => {});
      return;
    }

    it('connection states: suspended when cut off, then reconnected when healed', async () => {
      const a = await h.registry('a');
      const states = logStates(a);
      await a.announce({ role: 'worker', id: 'w1' }); // keeps the registry talking to the backend
      // ...with heartbeats; a member whose pod's readiness is its liveness writes nothing after announce, so the registry reads its role (a watch).
      if (h.pods) await a.members('worker');
      expect(a.state).toBe('connected');
      await h.partition(a);
      await waitFor(() => a.state === 'suspended', noticeMs, 'suspended');
      await h.heal(a);
      await waitFor(() => a.state === 'connected', noticeMs, 'reconnected');
      expect(states.map((s) => (s.after ? `${s.type} after ${s.after}` : s.type))).toEqual(['suspended', 'reconnected after suspended']);
    });

    it('connection states: lost once every lease has expired (leadership already given up), then reconnected and re-elected', async () => {
      const a = await h.registry('a');
      const states = logStates(a);
      await a.announce({ role: 'worker', id: 'w1' });
      const leadership = a.campaign('scheduler');
      const first = await leadership.whenElected();
      let stepDownAt: number | undefined;
      leadership.on('lost', () => (stepDownAt ??= performance.now()));
      const cutAt = performance.now();
      await h.partition(a);
      await waitFor(() => a.state === 'lost', lostAfterMs + noticeMs, 'lost');
      const lostAt = states.find((s) => s.type === 'lost')!.at;
      expect(lostAt - cutAt).toBeGreaterThanOrEqual(lostAfterMs - m.heartbeatIntervalMs - timings.toleranceMs);
      expect(stepDownAt, 'the leader stepped down').toBeDefined();
      expect(stepDownAt!).toBeLessThanOrEqual(lostAt);
      expect(leadership.isLeader).toBe(false);
      await h.heal(a);
      await waitFor(() => a.state === 'connected', noticeMs, 'reconnected');
      expect(states.map((s) => (s.after ? `${s.type} after ${s.after}` : s.type))).toEqual(['suspended', 'lost', 'reconnected after lost']);
      // The campaign goes on: the lone candidate leads again, in a new term.
      const again = await leadership.whenElected();
      expect(again).toBeGreaterThan(first);
    });

    /**
     * Partitions `watcher`, changes members meanwhile, heals; returns the events the watcher emitted from the cut on.
     * Without compaction the watcher may resume and replay history, which is real change, not phantom; so
     * each member changes at most once meanwhile. With compaction it must relist: then `gone` is also
     * updated before it vanishes, and the relist, which never saw that update, must report the data it knew.
     */
    const acrossDisconnect = async (compact: (() => Promise<void> | void) | undefined) => {
      const watcher = await h.registry('watcher');
      const b = await h.registry('b');
      const log = logMembers(watcher, 'worker');
      const gone = await b.announce({ role: 'worker', id: 'gone', payload: { last: 'gone' } });
      await b.announce({ role: 'worker', id: 'stays', payload: 'same' });
      const changes = await b.announce({ role: 'worker', id: 'changes', payload: { v: 1 } });
      await waitFor(() => log.events.length === 3, bound, 'the watcher to see three members');
      const from = log.events.length;
      await h.partition(watcher);
      if (compact) await gone.update({ last: 'unseen' });
      await gone.withdraw();
      await b.announce({ role: 'worker', id: 'appears', payload: { v: 'new' } });
      await changes.update({ v: 2 });
      await compact?.();
      await h.heal(watcher);
      const expected = [
        ['appears', { v: 'new' }],
        ['changes', { v: 2 }],
        ['stays', 'same'],
      ];
      await waitFor(async () => JSON.stringify((await watcher.members('worker')).map((x) => [x.id, x.payload])) === JSON.stringify(expected), noticeMs, 'the watcher to catch up');
      // Nothing more may follow: no phantom events once caught up.
      await observeFor(2 * m.heartbeatIntervalMs);
      return log.events.slice(from);
    };

    it('no lost or phantom member events across a disconnect: exactly the difference, once', async () => {
      const events = await acrossDisconnect(undefined);
      expect(events.map((e) => `${e.type} ${e.member.id}`).sort()).toEqual(['added appears', 'removed gone', 'updated changes']);
      const removed = events.find((e) => e.type === 'removed')!;
      // The vanished member's last data is what the watcher last saw of it.
      expect(removed.member.payload).toEqual({ last: 'gone' });
      expect(events.find((e) => e.type === 'updated')).toMatchObject({ member: { payload: { v: 2 } }, previous: { payload: { v: 1 } } });
      expect(events.find((e) => e.type === 'added')!.member.payload).toEqual({ v: 'new' });
    });

    if (h.capabilities.compact) {
      const compact = h.capabilities.compact;
      it('a relist after compaction emits exactly the difference, once', async () => {
        const events = await acrossDisconnect(compact);
        expect(events.map((e) => `${e.type} ${e.member.id}`).sort()).toEqual(['added appears', 'removed gone', 'updated changes']);
        expect(events.find((e) => e.type === 'removed')!.member.payload).toEqual({ last: 'gone' });
      });
    } else {
      it.skip(skipReason(h.backend, 'compact()', 'a relist after compaction emits exactly the difference'), () => {});
    }

    it('an observer cut off while the leader changes reports the current leader when healed, and no phantom', async () => {
      const o = await h.registry('observer');
      const a = await h.registry('a');
      const b = await h.registry('b');
      const observer = o.observe('scheduler');
      const la = a.campaign('scheduler');
      const tokenA = await la.whenElected();
      await waitFor(() => observer.leader?.identity === 'a', bound, 'the observer to see a');
      const seen: (string | undefined)[] = [];
      observer.on('changed', ({ leader }) => seen.push(leader?.identity));
      await h.partition(o);
      const lb = b.campaign('scheduler');
      await la.resign();
      const tokenB = await lb.whenElected();
      await h.heal(o);
      await waitFor(() => observer.leader?.identity === 'b', noticeMs, 'the observer to see b');
      expect(observer.leader!.fencingToken).toBe(tokenB);
      expect(tokenB).toBeGreaterThan(tokenA);
      await observeFor(2 * timings.election.retryPeriodMs);
      // Straight to b, or through "no leader" (the freed record); never back to a.
      expect(seen.filter((x) => x !== undefined)).toEqual(['b']);
      expect(observer.leader?.identity).toBe('b');
    });

    if (h.pods) {
      it('pod liveness: a member cut off past its lease stays, without an event, while its pod is Ready (its liveness is the pod\'s, not its writes)', async () => {
        const a = await h.registry('a');
        const b = await h.registry('b');
        await b.members('worker');
        const log = logMembers(b, 'worker');
        await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
        await log.next((e) => e.type === 'added', bound);
        await h.partition(a);
        // Past the lease a heartbeat would have had to renew, and the bound in which a removal would have arrived.
        await observeFor(m.leaseDurationMs + bound);
        expect(log.summary()).toEqual(['added w1']);
        expect((await b.members('worker')).map((x) => [x.id, x.payload])).toEqual([['w1', { n: 1 }]]);
      });
    }

    it('a member cut off past its lease is lost by its own clock before its peers remove it (with its last data), and comes back as a new incarnation when healed', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      // b reads workers before w1 joins: its watch sees the whole announce (a migrate store holds a new watch's
      // changes for up to its hold time while one side has shown nothing since the list, which would move the expiry).
      await b.members('worker');
      const log = logMembers(b, 'worker');
      const handle = await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
      const first = handle.incarnation;
      const lost: { at: number; reason: string }[] = [];
      handle.on('lost', (e) => lost.push({ at: performance.now(), reason: e.reason }));
      await log.next((e) => e.type === 'added', bound);
      const cutAt = performance.now();
      await h.partition(a);
      const lapse = await h.lapse(a, cutAt);
      const removed = await log.next((e) => e.type === 'removed', lapse.maxMs);
      expect(removed).toMatchObject({ reason: 'expired', member: { id: 'w1', payload: { n: 1 } } });
      expect(log.times[1]! - lapse.at).toBeGreaterThanOrEqual(lapse.minMs);
      // The member stopped first, by its own renew deadline: its peers wait a whole lease. A member in a pod has no
      // deadline by default (registry.member.podRenewDeadlineMs): its cut here is its pod's, and it comes back as itself.
      const judgedByLease = !h.pods;
      if (judgedByLease) {
        expect(lost).toMatchObject([{ reason: 'renew-deadline' }]);
        expect(lost[0]!.at).toBeLessThan(log.times[1]!);
        expect(handle.alive).toBe(false);
      }
      await h.heal(a);
      await log.next((e) => e.type === 'added', noticeMs + m.heartbeatIntervalMs, 2);
      expect(log.summary()).toEqual(['added w1', 'removed w1', 'added w1']);
      expect((await b.members('worker')).map((x) => x.payload)).toEqual([{ n: 1 }]);
      // A new record, never the old one written again.
      await waitFor(() => handle.alive, bound, 'the re-announced member alive');
      if (judgedByLease) expect(handle.incarnation).not.toBe(first);
    });
  });
}
