import type { Registry } from '@rollcall/core';
import { registryStore } from '@rollcall/core/admin';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../wait-for.js';
import { codeOf, writtenKeys, type Harness } from './harness.js';

/** Names every call must refuse: empty, spaces, slashes, bad edges, too long, not strings. */
const BAD_NAMES: unknown[] = ['', 'has space', 'a/b', '-leading', 'trailing.', 'x'.repeat(129), 'ünicode', 42, undefined, null];
/** Member ids and identities: like names, but `:` and `@` are fine and the limit is 253. */
const BAD_IDS: unknown[] = ['', 'has space', 'a/b', '-leading', 'x'.repeat(254), 7];
/** Values JSON cannot carry, each somewhere in a payload. */
const NON_JSON: unknown[] = [() => 1, Number.NaN, Number.POSITIVE_INFINITY, new Date(0), new Map(), { a: undefined }, [1, undefined], { big: 1n }, Symbol('s'), { nested: { fn: () => 2 } }];

function circular(): unknown {
  const o: Record<string, unknown> = {};
  o.self = o;
  return o;
}

/** Bad input: typed errors (asserted by `code`, never by message), and nothing written. */
export function badInputCases(h: Harness): void {
  describe('bad input gets a typed error and changes nothing', () => {
    const fresh = async (): Promise<Registry> => h.registry('bad-input');

    it('invalid role names: announce, members and watchMembers fail INVALID_ARGUMENT', async () => {
      const r = await fresh();
      for (const role of BAD_NAMES) {
        expect(await codeOf(r.announce({ role: role as string, id: 'w1' })), `announce role ${String(role)}`).toBe('INVALID_ARGUMENT');
        expect(await codeOf(r.members(role as string)), `members ${String(role)}`).toBe('INVALID_ARGUMENT');
        expect(await codeOf(() => r.watchMembers(role as string, () => {})), `watchMembers ${String(role)}`).toBe('INVALID_ARGUMENT');
      }
      expect(await writtenKeys(r)).toEqual([]);
    });

    it('invalid member ids fail INVALID_ARGUMENT', async () => {
      const r = await fresh();
      for (const id of BAD_IDS) expect(await codeOf(r.announce({ role: 'worker', id: id as string })), `id ${String(id)}`).toBe('INVALID_ARGUMENT');
      expect(await codeOf(r.announce(undefined as never))).toBe('INVALID_ARGUMENT');
      expect(await codeOf(() => r.watchMembers('worker', 'not a function' as never))).toBe('INVALID_ARGUMENT');
      expect(await writtenKeys(r)).toEqual([]);
    });

    it('invalid election names and identities: campaign and observe fail INVALID_ARGUMENT', async () => {
      const r = await fresh();
      for (const election of BAD_NAMES) {
        expect(await codeOf(() => r.campaign(election as string)), `campaign ${String(election)}`).toBe('INVALID_ARGUMENT');
        expect(await codeOf(() => r.observe(election as string)), `observe ${String(election)}`).toBe('INVALID_ARGUMENT');
      }
      for (const identity of BAD_IDS) expect(await codeOf(() => r.campaign('scheduler', identity as string)), `identity ${String(identity)}`).toBe('INVALID_ARGUMENT');
      expect(await writtenKeys(r)).toEqual([]);
    });

    it('campaigning twice for one election as one identity in one registry fails INVALID_ARGUMENT', async () => {
      const r = await fresh();
      const leadership = r.campaign('scheduler');
      expect(await codeOf(() => r.campaign('scheduler'))).toBe('INVALID_ARGUMENT');
      const token = await leadership.whenElected();
      expect(leadership.fencingToken).toBe(token);
      expect(await writtenKeys(r)).toEqual(['election/scheduler']);
    });

    it('invalid lock names: lock and tryLock fail INVALID_ARGUMENT', async () => {
      const r = await fresh();
      for (const name of BAD_NAMES) {
        expect(await codeOf(() => r.lock(name as string)), `lock ${String(name)}`).toBe('INVALID_ARGUMENT');
        expect(await codeOf(r.tryLock(name as string)), `tryLock ${String(name)}`).toBe('INVALID_ARGUMENT');
      }
      expect(await writtenKeys(r)).toEqual([]);
    });

    it('a negative or non-finite timeoutMs fails INVALID_ARGUMENT, from a rejected promise', async () => {
      const r = await fresh();
      for (const timeoutMs of [-1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, '100' as unknown as number]) {
        let returned: Promise<unknown> | undefined;
        expect(() => (returned = r.lock('l', { timeoutMs })), `lock() with timeoutMs ${timeoutMs} must reject, not throw`).not.toThrow();
        expect(await codeOf(returned!), `timeoutMs ${timeoutMs}`).toBe('INVALID_ARGUMENT');
      }
      expect(await writtenKeys(r)).toEqual([]);
    });

    it('a payload over the limit fails PAYLOAD_TOO_LARGE on announce and on update; peers keep the last good payload', async () => {
      const r = await fresh();
      const peer = await h.registry('peer');
      const limit = Math.min(r.config.maxPayloadBytes, registryStore(r).maxPayloadBytes);
      const tooBig = 'x'.repeat(limit - 1); // JSON adds two quotes: limit + 1 bytes
      expect(await codeOf(r.announce({ role: 'worker', id: 'big', payload: tooBig }))).toBe('PAYLOAD_TOO_LARGE');
      expect(await writtenKeys(r)).toEqual([]);
      const member = await r.announce({ role: 'worker', id: 'w1', payload: { ok: 1 } });
      // The peer is another client: the announce reaches it through its watch, within the bound.
      await waitFor(async () => (await peer.members('worker')).length === 1 || undefined, h.timings.watchBoundMs, 'the peer to see the member');
      expect(await codeOf(member.update(tooBig))).toBe('PAYLOAD_TOO_LARGE');
      expect(member.payload).toEqual({ ok: 1 });
      const stored = await registryStore(r).get('member/worker/w1');
      expect(stored?.record.payload).toEqual({ ok: 1 });
      expect((await peer.members('worker')).map((m) => m.payload)).toEqual([{ ok: 1 }]);
    });

    it('a payload of exactly the limit is accepted and reaches peers whole', async () => {
      const r = await fresh();
      const limit = Math.min(r.config.maxPayloadBytes, registryStore(r).maxPayloadBytes);
      const exact = 'x'.repeat(limit - 2);
      await r.announce({ role: 'worker', id: 'w1', payload: exact });
      expect((await registryStore(r).get('member/worker/w1'))?.record.payload).toBe(exact);
    });

    it('a payload JSON cannot carry fails INVALID_ARGUMENT on announce and on update', async () => {
      const r = await fresh();
      for (const payload of [...NON_JSON, circular()]) {
        expect(await codeOf(r.announce({ role: 'worker', id: 'w1', payload: payload as never })), `payload ${String(payload)}`).toBe('INVALID_ARGUMENT');
      }
      expect(await writtenKeys(r)).toEqual([]);
      const member = await r.announce({ role: 'worker', id: 'w2', payload: 'fine' });
      for (const payload of NON_JSON) expect(await codeOf(member.update(payload as never))).toBe('INVALID_ARGUMENT');
      expect((await registryStore(r).get('member/worker/w2'))?.record.payload).toBe('fine');
    });

    /** Each configuration fails INVALID_CONFIG naming its key, and nothing is written. */
    const expectConfigRejected = async (cases: [Record<string, unknown>, string][]) => {
      for (const [overrides, key] of cases) {
        const err = await h.create(h.config('bad-config', overrides)).then(
          () => undefined,
          (e: unknown) => e as { code?: string; key?: string },
        );
        expect(err?.code, key).toBe('INVALID_CONFIG');
        expect(err?.key, key).toBe(key);
      }
      const r = await fresh();
      expect(await writtenKeys(r)).toEqual([]);
    };

    it('impossible timings fail INVALID_CONFIG naming the key, before anything is contacted', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ election: { leaseDurationMs: 2000, renewDeadlineMs: 2000, retryPeriodMs: 300 } }, 'registry.election.renewDeadlineMs'],
        [{ election: { leaseDurationMs: 3000, renewDeadlineMs: 1000, retryPeriodMs: 1000 } }, 'registry.election.renewDeadlineMs'],
        [{ lock: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 0 } }, 'registry.lock.retryPeriodMs'],
        [{ lock: { leaseDurationMs: -1, renewDeadlineMs: 1500, retryPeriodMs: 300 } }, 'registry.lock.leaseDurationMs'],
        [{ member: { heartbeatIntervalMs: 800, leaseDurationMs: 1000 } }, 'registry.member.leaseDurationMs'],
        [{ member: { heartbeatIntervalMs: -5, leaseDurationMs: 2000 } }, 'registry.member.heartbeatIntervalMs'],
        [{ requestTimeoutMs: 0 }, 'registry.requestTimeoutMs'],
      ];
      await expectConfigRejected(cases);
    });

    it('unknown and mistyped configuration keys fail INVALID_CONFIG naming the key', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ bogus: 1 }, 'registry.bogus'],
        [{ election: { leaseDurationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300, retryPeriod: 5 } }, 'registry.election.retryPeriod'],
        [{ member: { heartbeatIntervalMs: 400, leaseDurationMs: 2000, ttl: 3 } }, 'registry.member.ttl'],
        [{ requestTimeoutMs: 'soon' }, 'registry.requestTimeoutMs'],
        [{ election: { leaseDurationMs: 2000.5, renewDeadlineMs: 1500, retryPeriodMs: 300 } }, 'registry.election.leaseDurationMs'],
        [{ cluster: 'Not_A_Label' }, 'registry.cluster'],
        [{ identity: 'has space' }, 'registry.identity'],
      ];
      await expectConfigRejected(cases);
    });
  });
}
