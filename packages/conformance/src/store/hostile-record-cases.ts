import { createRegistry, ErrorCode, systemClock, type Clock } from '@rollcall/core';
import type { RecordKey, RecordStore } from '@rollcall/core/spi';
import { expect, it } from 'vitest';
import { skipReason, type StoreCapabilities } from '../capabilities.js';
import { uniqueCluster } from '../names.js';
import { leaseRecord } from '../records.js';
import { waitFor } from '../wait-for.js';
import type { StoreHarness } from './harness.js';

/** How many hostile values one run writes; each case prints its seed. */
const VALUES = 48;

/** A seeded xorshift32: the same seed gives the same values, so a failure can be replayed. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const pick = <T>(next: () => number, items: readonly T[]): T => items[Math.floor(next() * items.length)]!;

const HOSTILE_TEXT = ['\u0000', '\u001b[2J', '\u009b31m', '\u202e', '\ud800', '💥', 'é', '"', '\\', '\n', '{', '}', 'null'];
const HOSTILE_DURATIONS = [-1, 0, 1.5, 3601, 2 ** 31, 2 ** 53 + 2, 1e300, '15', null, true];
const HOSTILE_TIMES = ['not a time', '9999-12-31T23:59:59Z', '1970-01-01T00:00:00Z', '', 42, null, '2026-13-45T99:99:99Z'];
const HOSTILE_IDENTITIES = ['', 'x'.repeat(10_000), '\u001b]0;pwned\u0007', '\u202eevil', 'a/b', 'member/worker/ok', '\u0000'];

function nested(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = { v: value };
  return value;
}

/**
 * One value a foreign or broken writer could leave where a record belongs, as
 * stored text: not JSON, JSON of another shape, or a record with hostile
 * fields (durations out of range, times that are not, identities with control
 * characters, deep or large payloads, an unknown liveness).
 */
export function hostileValue(next: () => number): string {
  const base = { ...leaseRecord('foreign') } as Record<string, unknown>;
  switch (Math.floor(next() * 8)) {
    case 0:
      return Array.from({ length: 1 + Math.floor(next() * 40) }, () => pick(next, HOSTILE_TEXT)).join('');
    case 1:
      return JSON.stringify(pick(next, [42, 'a string', [1, 2], null, true, { unrelated: 'object' }]));
    case 2:
      return JSON.stringify(base).slice(0, Math.floor(next() * 40));
    case 3:
      return JSON.stringify({ ...base, leaseDurationSeconds: pick(next, HOSTILE_DURATIONS) });
    case 4:
      return JSON.stringify({ ...base, leaseTransitions: pick(next, HOSTILE_DURATIONS), [pick(next, ['renewTime', 'acquireTime'])]: pick(next, HOSTILE_TIMES) });
    case 5:
      return JSON.stringify({ ...base, holderIdentity: pick(next, HOSTILE_IDENTITIES) });
    case 6:
      return JSON.stringify({ ...base, payload: pick(next, [nested(200), 'y'.repeat(30_000), { '\u0000': '\u202e' }]) });
    default:
      return JSON.stringify({ ...base, liveness: pick(next, [{ mode: 'pod', podUid: '\u0000' }, { mode: 'carrier-pigeon' }, 'heartbeat', 7]) });
  }
}

/** A clock that counts the timers armed on it. */
function countingClock(): Clock & { armed: number } {
  const clock = {
    armed: 0,
    now: () => systemClock.now(),
    wallNow: () => systemClock.wallNow(),
    setTimeout(fn: () => void, delayMs: number) {
      clock.armed++;
      return systemClock.setTimeout(fn, delayMs);
    },
  };
  return clock;
}

/**
 * Records written past the store by someone else: a seeded set of hostile
 * values, each overwriting a record the case created. Readers must report each
 * as corrupt or read it as a valid record, keep serving the rest, and never
 * crash or spin. Needs the backend's `overwriteRaw`: skipped, saying so, without it.
 */
export function hostileRecordCases(h: StoreHarness): void {
  const { overwriteRaw } = h.capabilities;
  if (overwriteRaw) overwrittenRecordCases(h.name, h.open, overwriteRaw);
  else it.skip(skipReason(h.name, 'overwriteRaw()', 'hostile records written past the store are corrupt or valid, and readers keep serving'), () => {});
}

/** The cases, over records `overwriteRaw` overwrites; `open` registers each store for closing after the case. */
function overwrittenRecordCases(name: string, open: (cluster: string) => Promise<RecordStore>, overwriteRaw: NonNullable<StoreCapabilities['overwriteRaw']>): void {
  const seed = Number(process.env.ROLLCALL_HOSTILE_SEED ?? 20261207);

  async function plant(cluster: string): Promise<{ store: RecordStore; keys: RecordKey[]; values: Map<RecordKey, string> }> {
    const store = await open(cluster);
    const next = random(seed);
    const keys: RecordKey[] = [];
    const values = new Map<RecordKey, string>();
    await store.create('member/hostile/ok', leaseRecord('ok'));
    for (let i = 0; i < VALUES; i++) {
      const key: RecordKey = `member/hostile/m${i}`;
      const value = hostileValue(next);
      await store.create(key, leaseRecord(`m${i}`));
      // A backend whose server refuses the value (a schema) has nothing hostile to read there.
      if (!(await overwriteRaw(cluster, key, value))) continue;
      keys.push(key);
      values.set(key, value);
    }
    return { store, keys, values };
  }

  it(`${name}: hostile records written past the store (seed ${seed}) are corrupt or valid for get and list, never another error`, async () => {
    const { store, keys, values } = await plant(uniqueCluster('hostile'));
    {
      expect(keys.length, 'the backend took none of the hostile values').toBeGreaterThan(VALUES / 2);
      const list = await store.list('member/hostile/');
      expect(list.records.map((r) => r.key)).toContain('member/hostile/ok');
      const corrupt = new Set(list.corrupt.map((c) => c.key));
      for (const key of keys) {
        const read = await store.get(key).then(
          (stored) => ({ stored }),
          (err: Error & { code?: string }) => ({ err }),
        );
        if ('err' in read) {
          expect(read.err.code, `${key} = ${JSON.stringify(values.get(key))}: ${read.err.message}`).toBe(ErrorCode.CORRUPT_RECORD);
          expect(corrupt.has(key), `${key} corrupt for get but not for list`).toBe(true);
        } else {
          const record = read.stored?.record;
          expect(record, `${key} vanished`).toBeDefined();
          expect(corrupt.has(key), `${key} read by get but corrupt for list`).toBe(false);
          expect(Number.isInteger(record!.leaseDurationSeconds) && record!.leaseDurationSeconds >= 0 && record!.leaseDurationSeconds <= 3600, `${key}: lease ${record!.leaseDurationSeconds}`).toBe(true);
          expect(Number.isSafeInteger(record!.leaseTransitions) && record!.leaseTransitions >= 0, `${key}: token ${record!.leaseTransitions}`).toBe(true);
        }
      }
    }
  });

  it(`${name}: a registry over hostile records keeps serving the valid member beside them, reports each corrupt one once, and its timers do not spin`, async () => {
    const cluster = uniqueCluster('hostile-registry');
    await plant(cluster);
    const clock = countingClock();
    const store = await open(cluster);
    const registry = await createRegistry({ type: store.backend as never, cluster, identity: 'reader', readOnly: true }, { store, clock });
    try {
      const corrupt: string[] = [];
      registry.on('corruptRecord', (e) => corrupt.push(e.key));
      const members = await registry.members('hostile');
      expect(members.map((m) => m.id)).toContain('ok');
      await waitFor(() => corrupt.length > 0, 10_000, 'the corrupt records reported');
      expect(new Set(corrupt).size, 'each corrupt record reported once').toBe(corrupt.length);
      // A rate, not a wait for an event: a judge re-armed at Node's 1 ms overflow would arm thousands here.
      const before = clock.armed;
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(clock.armed - before, 'timers armed in one second').toBeLessThan(100);
      expect(registry.state).toBe('connected');
    } finally {
      await registry.close();
    }
  });
}
