import { describe, expect, it } from 'vitest';
import { skipReason } from '../capabilities.js';
import { waitFor } from '../wait-for.js';
import { logMembers, type Harness } from './harness.js';

/** A server restart: clients reconnect on their own, records survive, everything keeps working. */
export function restartCases(h: Harness): void {
  const { timings } = h;
  const bound = timings.watchBoundMs;
  const restart = h.capabilities.restartServer;

  describe('server restart', () => {
    if (!restart) {
      it.skip(skipReason(h.backend, 'restartServer()', 'clients reconnect after a server restart and members, leadership and locks keep working'), () => {});
      return;
    }

    it('clients reconnect after a server restart; members, leadership and locks keep working', async () => {
      const a = await h.registry('a');
      const b = await h.registry('b');
      const log = logMembers(b, 'worker');
      const member = await a.announce({ role: 'worker', id: 'w1', payload: { n: 1 } });
      const leadership = a.campaign('scheduler');
      const before = await leadership.whenElected();
      await log.next((ev) => ev.type === 'added', bound);
      await restart();
      const settleMs = timings.member.leaseDurationMs + timings.requestTimeoutMs + bound;
      await waitFor(() => a.state === 'connected' && b.state === 'connected', settleMs, 'both clients to reconnect');
      await member.update({ n: 2 });
      // An outage longer than the member's renew deadline ends its incarnation (lost by its own clock, before any peer
      // may remove it) and the handle announces a new one: then the payload arrives with its `added`, else as `updated`.
      const carriesTwo = (ev: { member: { id: string; payload?: unknown } }) => ev.member.id === 'w1' && (ev.member.payload as { n?: number })?.n === 2;
      await log.next((ev) => (ev.type === 'updated' || ev.type === 'added') && carriesTwo(ev), settleMs);
      await waitFor(async () => (await b.members('worker')).some((x) => carriesTwo({ member: x }) && x.incarnation === member.incarnation), settleMs, 'w1 present, with its payload and its handle\'s incarnation');
      const after = await leadership.whenElected();
      expect(after).toBeGreaterThanOrEqual(before);
      const lock = await b.lock('after-restart', { timeoutMs: settleMs });
      expect(lock.held).toBe(true);
      await lock.release();
    });
  });
}
