import { ErrorCode } from '@rollcall/core';
import { afterEach, expect, it } from 'vitest';
import { MAX_QUEUED_REQUESTS } from '../src/dialect.js';
import { createMysqlStore } from '../src/index.js';
import { testDatabase, testOptions } from './support/mariadb.js';

const db = testDatabase('pool_queue');
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await db.exec('ROLLBACK').catch(() => undefined);
  await Promise.allSettled(opened.splice(0).map((s) => s.close()));
});

it(`calls past the pool's queue of ${MAX_QUEUED_REQUESTS} fail UNAVAILABLE at once; the queued ones go on when the connection frees`, async () => {
  const store = await createMysqlStore({ cluster: 'q', ...testOptions(db.name, { poolSize: 1 }), requestTimeoutMs: 20_000 });
  opened.push(store);
  const first = await store.create('member/w/a', { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: null, renewTime: null, leaseTransitions: 1 });
  // Another session holds the revision row: the store's one connection waits on it inside an update.
  await db.exec('BEGIN');
  await db.exec('SELECT revision FROM rollcall_state WHERE id = 1 FOR UPDATE');
  const blocked = store.update('member/w/a', { ...first.record, holderIdentity: 'b' }, first.version);
  // The update holds the only connection once its transaction is waiting on the row lock; then the queue fills.
  const queued = Array.from({ length: MAX_QUEUED_REQUESTS }, () => store.get('member/w/a'));
  const over = await store.get('member/w/a').then(
    () => undefined,
    (err: Error & { code?: string }) => err,
  );
  expect(over?.code).toBe(ErrorCode.UNAVAILABLE);
  expect(over?.message).toContain('its queue of waiting calls is full');
  await db.exec('COMMIT');
  await expect(blocked).resolves.toMatchObject({ record: { holderIdentity: 'b' } });
  const answered = await Promise.allSettled(queued);
  expect(answered.filter((r) => r.status === 'fulfilled')).toHaveLength(MAX_QUEUED_REQUESTS);
});
