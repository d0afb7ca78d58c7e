import { afterEach, describe, expect, it } from 'vitest';
import { ErrorCode, PermissionError } from '../src/index.js';
import { Harness } from './harness.js';

/** A store that refuses every write to election and lock records, as a Role without `update` does. */
function refuseLeases(store: { create: unknown; update: unknown }): void {
  for (const method of ['create', 'update'] as const) {
    const original = (store[method] as (...a: unknown[]) => Promise<unknown>).bind(store);
    store[method] = (key: string, ...rest: unknown[]) =>
      key.startsWith('member/') ? original(key, ...rest) : Promise.reject(new PermissionError('PERMISSION_DENIED', `cannot ${method} ${key}`, { backend: 'memory' }));
  }
}

describe('a backend that refuses the identity', () => {
  let h: Harness;
  afterEach(async () => h.closeAll());

  it('ends the campaign with a typed error, and changes nothing', async () => {
    h = new Harness();
    const a = await h.registry('a');
    refuseLeases(a.store);
    const leadership = a.registry.campaign('scheduler');
    const errors: string[] = [];
    leadership.on('error', (e) => errors.push(e.error.code));
    await expect(leadership.whenElected()).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    await h.clock.advance(60_000);
    expect(errors).toEqual([ErrorCode.PERMISSION_DENIED]);
    expect(leadership.error?.code).toBe(ErrorCode.PERMISSION_DENIED);
    expect(h.backend.rows.size).toBe(0);
    // Announcing is still allowed.
    await a.registry.announce({ role: 'worker', id: 'w1' });
    expect(h.backend.rows.size).toBe(1);
  });

  it('rejects lock() and tryLock() with the typed error', async () => {
    h = new Harness();
    const a = await h.registry('a');
    refuseLeases(a.store);
    await expect(a.registry.lock('jobs', { timeoutMs: 60_000 })).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    await expect(a.registry.tryLock('jobs')).rejects.toMatchObject({ code: ErrorCode.PERMISSION_DENIED });
    expect(h.backend.rows.size).toBe(0);
  });

  it('a leader whose renewals are refused steps down at once and says why', async () => {
    h = new Harness();
    const a = await h.registry('a');
    const leadership = a.registry.campaign('scheduler');
    await h.clock.advance(0);
    expect(leadership.isLeader).toBe(true);
    const lost: string[] = [];
    leadership.on('lost', (e) => lost.push(e.reason));
    refuseLeases(a.store);
    await h.clock.advance(2_000);
    expect(leadership.isLeader).toBe(false);
    expect(lost).toEqual(['failed']);
    expect(leadership.error?.code).toBe(ErrorCode.PERMISSION_DENIED);
  });
});
