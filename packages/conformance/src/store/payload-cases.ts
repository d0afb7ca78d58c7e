import { describe, expect, it } from 'vitest';
import { leaseRecord } from '../records.js';
import { rejection } from '../wait-for.js';
import { codeOf, type StoreHarness } from './harness.js';

/** A payload whose JSON is exactly `bytes` bytes: a string of `bytes - 2` characters plus its quotes. */
function payloadOfBytes(bytes: number): string {
  return 'x'.repeat(bytes - 2);
}

/** Payload size: over `maxPayloadBytes` refused and nothing written, exactly at it kept whole. */
export function payloadCases(h: StoreHarness): void {
  const { store } = h;

  describe('payload size', () => {
    it('a payload over maxPayloadBytes fails PAYLOAD_TOO_LARGE on create and on update, and nothing is written', async () => {
      const limit = store().maxPayloadBytes;
      expect(Number.isInteger(limit) && limit > 2).toBe(true);
      const tooBig = payloadOfBytes(limit + 1);
      expect(codeOf(await rejection(store().create('member/worker/big', leaseRecord('big', tooBig))))).toBe('PAYLOAD_TOO_LARGE');
      expect(await store().get('member/worker/big')).toBeUndefined();
      const small = await store().create('member/worker/w', leaseRecord('w', { ok: true }));
      expect(codeOf(await rejection(store().update('member/worker/w', leaseRecord('w', tooBig), small.version)))).toBe('PAYLOAD_TOO_LARGE');
      expect(await store().get('member/worker/w')).toEqual(small);
    });

    it('a payload of exactly maxPayloadBytes is kept whole', async () => {
      const exact = payloadOfBytes(store().maxPayloadBytes);
      await store().create('member/worker/exact', leaseRecord('exact', exact));
      expect((await store().get('member/worker/exact'))?.record.payload).toBe(exact);
    });
  });
}
